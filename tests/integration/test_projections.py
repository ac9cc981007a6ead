"""Projections: exactly once, rebuildable, and loud about events they cannot read."""

from __future__ import annotations

import asyncio
from uuid import UUID, uuid4

import nats
import pytest
from eventsourcing.persistence import StoredEvent
from nats.js.api import ConsumerConfig

from adapters.config.settings import Settings
from adapters.container import Container
from adapters.nats.stream import EventStream
from adapters.services import Services
from adapters.system import System
from domain.conversation import ModelTurn, TextBlock, Usage
from domain.events import SessionEvent
from projections.rebuild import rebuild
from projections.runner import ProjectionRunner
from projections.view import ProjectionError
from tests.fakes.feeds import ListFeed
from tests.waiting import eventually_async

pytestmark = pytest.mark.integration


def busy_session(container: Container, messages: int = 3) -> UUID:
    """A session with messages, a run with a turn, tool calls and a failure."""
    app = container.sessions
    sid = app.start_session(workspace_id=uuid4(), owner_id=uuid4(), title="busy").session_id
    for i in range(messages):
        app.append_user_message(sid, f"m{i}")
    run = uuid4()
    app.request_run(sid, run)
    app.start_run(sid, run, "w")
    turn = ModelTurn((TextBlock("ok"),), "end_turn", Usage(10, 5, 3, 2), "m")
    app.record_assistant_turn(sid, run, turn, 7)
    app.request_tool_call(sid, "t1", "web_search", {"q": "x"})
    app.record_tool_result(sid, "t1", "error", "boom", error="boom")
    app.request_tool_call(sid, "t2", "web_search", {"q": "y"})
    app.record_tool_result(sid, "t2", "success", "fine")
    app.complete_run(sid, run)
    app.rename_session(sid, "renamed")
    return sid


async def test_a_redelivered_batch_changes_the_read_model_once(container: Container) -> None:
    sid = busy_session(container)
    log = container.recorder.select_notifications(1, 100)
    feed = ListFeed([log[:4], log[:4], log[2:], log])  # repeats and overlaps
    view = container.views["sessions"]
    runner = ProjectionRunner(
        [view], mapper=container.sessions.mapper, feed=feed, bridge=container.bridge
    )
    await runner.run()

    row = view.get(sid)
    assert row is not None
    assert (row.message_count, row.tool_call_count, row.failure_count) == (4, 2, 1)
    assert (row.input_tokens, row.output_tokens, row.cache_read_tokens, row.cache_write_tokens) == (
        10,
        5,
        3,
        2,
    )
    assert (row.status, row.title, row.version) == ("completed", "renamed", len(log))
    assert runner.progress[view.name].applied == len(log)
    assert feed.acked == 4, "every batch is acked once it is committed"


async def test_the_live_read_model_equals_a_rebuilt_one_row_for_row(
    container: Container, services: Services
) -> None:
    sids = [busy_session(container, messages=i) for i in range(1, 6)]
    container.sessions.archive_session(sids[0])
    view = container.views["sessions"]
    head = container.recorder.max_notification_id() or 0
    assert await container.bridge(view.wait_for, head, 30.0)
    live = view.all_rows()
    assert len(live) == 5

    report = rebuild(view, container.recorder, container.sessions.mapper)
    assert report.events == head and report.position == head
    assert view.all_rows() == live
    assert view.position() == head


async def test_queries_can_wait_for_their_own_writes(
    container: Container, services: Services
) -> None:
    view = container.views["sessions"]
    receipt = container.sessions.start_session(workspace_id=uuid4(), owner_id=uuid4(), title="ryw")
    assert await container.bridge(view.wait_for, receipt.notification_id, 30.0)
    assert view.get(receipt.session_id) is not None
    assert not await container.bridge(view.wait_for, receipt.notification_id + 1000, 0.2)


def corrupt_event(container: Container) -> int:
    container.recorder.insert_events(
        [
            StoredEvent(
                originator_id=uuid4(), originator_version=1, topic="nowhere:Missing", state=b"{}"
            )
        ]
    )
    return container.recorder.max_notification_id() or 0


async def test_an_unknown_topic_stops_the_projection_naming_its_notification_id(
    container: Container, services: Services
) -> None:
    busy_session(container)
    bad = corrupt_event(container)
    runner = services.runners["sessions"]
    await eventually_async(lambda: runner.error is not None, what="the projection to stop")
    assert isinstance(runner.error, ProjectionError)
    assert f"notification id {bad}" in str(runner.error)
    assert runner.view.position() == bad - 1, "nothing after the bad event is applied"
    for name, view in container.views.items():  # one feed: every view of the log stops
        if container.log_of(name) is container.sessions:
            assert f"notification id {bad}" in str(services.runners[name].error)
            assert view.position() == bad - 1

    with pytest.raises(ProjectionError, match=f"notification id {bad}"):
        rebuild(runner.view, container.recorder, container.sessions.mapper)


async def test_a_corrupt_payload_stops_a_rebuild_naming_its_notification_id(
    container: Container,
) -> None:
    sid = busy_session(container)
    container.recorder.insert_events(
        [StoredEvent(sid, 100, "domain.session:AgentSession.SessionRenamed", b"not json")]
    )
    bad = container.recorder.max_notification_id()
    view = container.views["sessions"]
    with pytest.raises(ProjectionError, match=f"notification id {bad}"):
        rebuild(view, container.recorder, container.sessions.mapper)
    assert view.position() == 0, "a failed rebuild leaves the view as it was"


async def _is(value: bool) -> bool:
    await asyncio.sleep(0)
    return value


async def test_consumers_left_by_runners_of_one_view_each_are_deleted_at_start(
    system: System, settings: Settings, nats_url: str
) -> None:
    nc = await nats.connect(nats_url)
    try:
        js = nc.jetstream()
        stream = EventStream(lambda: nc, settings.nats_stream)
        await stream.ensure()
        left = ["projection-sessions", "projection-usage"]
        for durable in [*left, "someone-elses"]:
            await js.add_consumer(stream.name, ConsumerConfig(durable_name=durable))
        await system.services.start()
        try:

            async def only_ours_and_others() -> bool:
                names = {c.name for c in await js.consumers_info(stream.name)}
                return f"projections-{system.container.sessions.name}" in names and not (
                    names & set(left)
                )

            await eventually_async(only_ours_and_others, what="the old consumers to go")
            names = {c.name for c in await js.consumers_info(stream.name)}
            assert "someone-elses" in names
        finally:
            await system.services.stop()
    finally:
        await nc.close()


def test_the_sessions_row_from_one_batch_is_the_row_from_one_event_at_a_time(
    container: Container,
) -> None:
    """The sessions view writes a session's row once per batch, folding its events (the
    counts summed, the last status); the row is the one that event after event gives,
    with an approval asked and answered in the middle of the batch or across batches."""
    app, view = container.sessions, container.views.sessions
    sid = busy_session(container)
    run = uuid4()
    app.request_run(sid, run)
    app.start_run(sid, run, "w")
    app.request_tool_call(sid, "t3", "code_execute", {"code": "1"})
    app.request_confirmation(sid, "a1", "t3", "code_execute", {"code": "1"}, "run it")
    app.give_confirmation(sid, "a1", True)
    events = list(app.session_events(sid))
    # Split right after the request: the answer meets a status this batch does not know.
    split = next(i for i, e in enumerate(events) if type(e).__name__ == "ConfirmationGiven")

    def row_after(*batches: list[SessionEvent]) -> dict[str, object]:
        with view.datastore.transaction(commit=True) as curs:
            curs.execute("DELETE FROM sessions_view")
            for batch in batches:
                view.apply_events(curs, batch)
        summary = view.get(sid)
        assert summary is not None
        return {**summary.__dict__}

    one_by_one = row_after(*([e] for e in events))
    assert row_after(events) == one_by_one
    assert row_after(events[:split], events[split:]) == one_by_one
    assert one_by_one["status"] == "running" and one_by_one["active_run"] == run
    assert one_by_one["message_count"] == 4 and one_by_one["tool_call_count"] == 3
    assert one_by_one["failure_count"] == 1 and one_by_one["title"] == "renamed"
    assert one_by_one["version"] == events[-1].originator_version


def test_a_call_made_by_hand_outside_a_run_keeps_the_session_s_status(
    container: Container,
) -> None:
    """An approval asked for a call made by hand, with no run going, keeps no run waiting:
    the session stays as its last run left it, asked and answered, in the aggregate and
    in the view, whatever the batches; a run's approval still makes it wait."""
    app, view = container.sessions, container.views.sessions
    sid = busy_session(container)  # its run completed
    app.request_tool_call(sid, "manual_1", "code_execute", {"code": "1"})
    app.request_confirmation(sid, "a1", "manual_1", "code_execute", {"code": "1"}, "run it")
    asked = app.get_session(sid).version
    assert app.get_session(sid).status == "completed"
    app.give_confirmation(sid, "a1", True)
    assert app.get_session(sid).status == "completed"
    run = uuid4()
    app.request_run(sid, run)
    app.start_run(sid, run, "w")
    app.request_tool_call(sid, "t9", "code_execute", {"code": "2"})
    app.request_confirmation(sid, "a2", "t9", "code_execute", {"code": "2"}, "run it")
    events = list(app.session_events(sid))

    def statuses(*batches: list[SessionEvent]) -> list[str]:
        """The row's status after each batch."""
        seen = []
        with view.datastore.transaction(commit=True) as curs:
            curs.execute("DELETE FROM sessions_view")
        for batch in batches:
            with view.datastore.transaction(commit=True) as curs:
                view.apply_events(curs, batch)
            summary = view.get(sid)
            assert summary is not None
            seen.append(summary.status)
        return seen

    at_ask = next(i for i, e in enumerate(events) if e.originator_version == asked) + 1
    at_run = next(i for i, e in enumerate(events) if type(e).__name__ == "RunRequested" and
                  getattr(e, "run_id", None) == run)  # fmt: skip
    assert statuses(events[:at_ask], events[at_ask:at_run], events[at_run:]) == [
        "completed", "completed", "waiting"
    ]  # fmt: skip
    assert statuses(events) == ["waiting"]
    assert statuses(events[:at_ask], events[at_ask:]) == ["completed", "waiting"]
    one_by_one = statuses(*([e] for e in events))
    assert one_by_one[at_ask - 1 : at_run] == ["completed"] * (at_run - at_ask + 1)
    assert app.get_session(sid).status == "waiting"
