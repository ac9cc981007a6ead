"""The working-memory view on real Postgres: equal to the pure fold, exactly once, rebuildable."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast
from uuid import UUID, uuid4

import pytest
from psycopg.types.json import Jsonb

from adapters.container import Container
from adapters.services import Services
from domain.events import SessionEvent
from domain.values import Citation, PlanItem
from domain.working_memory import WorkingMemoryState, fold_all
from domain.working_memory_render import render
from projections.rebuild import rebuild
from projections.runner import ProjectionRunner
from projections.working_memory import WorkingMemoryView
from tests.fakes.feeds import ListFeed

pytestmark = pytest.mark.integration


def working_session(container: Container, findings: int = 2) -> UUID:
    """A session whose plan, findings and progress log all have something in them."""
    app = container.sessions
    sid = app.start_session(workspace_id=uuid4(), owner_id=uuid4(), title="Laptops").session_id
    app.append_user_message(sid, "compare laptops")
    run = uuid4()
    app.request_run(sid, run)
    app.start_run(sid, run, "w1")
    app.update_plan(sid, [PlanItem("Search", "in_progress"), PlanItem("Report")])
    for i in range(findings):
        citations = [Citation(f"https://a.example/{i % 2}", f"A{i % 2}")]
        app.record_finding(sid, f"finding {i}", citations)
    app.request_tool_call(sid, "t1", "web_search", {"q": "x"})
    app.record_tool_result(sid, "t1", "error", "boom", error="HTTP 503")
    app.request_tool_call(sid, "t2", "read_page", {"url": "https://a.example/0"})
    app.record_tool_result(sid, "t2", "success", "read")
    app.record_strike(sid, "web_search", "HTTP 503", 3)
    app.note_progress(sid, "searched twice")
    app.update_plan(sid, [PlanItem("Search", "done"), PlanItem("Report")])
    app.request_tool_call(sid, "t3", "run_code", {"code": "print(1)"})  # left open
    app.rename_session(sid, "Laptops under 1 kg")
    return sid


def pure_state(container: Container, session_id: UUID) -> WorkingMemoryState:
    return fold_all(cast(list[SessionEvent], list(container.sessions.session_events(session_id))))


def view_of(container: Container) -> WorkingMemoryView:
    view = container.views["working_memory"]
    assert isinstance(view, WorkingMemoryView)
    return view


def assert_view_is_the_fold(container: Container, session_ids: Sequence[UUID]) -> None:
    view = view_of(container)
    for sid in session_ids:
        expected = pure_state(container, sid)
        assert view.state(sid) == expected
        assert view.get(sid) == render(expected)


async def test_the_live_view_holds_the_render_of_each_sessions_events(
    container: Container, services: Services
) -> None:
    sids = [working_session(container, findings=i) for i in range(3)]
    # At version 15, t3 has no result and the run is active: the fork interrupts both.
    fork = container.sessions.fork_session(sids[2], 15)
    sids.append(fork.session_id)
    view = view_of(container)
    head = container.recorder.max_notification_id() or 0
    assert await container.bridge(view.wait_for, head, 30.0)

    assert_view_is_the_fold(container, sids)
    wm = view.get(sids[2])
    assert wm is not None
    assert "Goal: Laptops under 1 kg\n" in wm.task_plan and "- [x] Search\n" in wm.task_plan
    assert "tool web_search failed: HTTP 503 (boom)\n" in wm.progress
    assert (wm.finding_count, wm.source_count) == (2, 2)
    state = view.state(sids[2])
    assert state is not None and state.open_calls == {"t3": "run_code"}
    forked = view.get(fork.session_id)
    assert forked is not None and "interrupted" in forked.progress
    assert view.get(uuid4()) is None


async def test_a_redelivered_batch_changes_the_view_once(container: Container) -> None:
    sids = [working_session(container), working_session(container, findings=3)]
    log = container.recorder.select_notifications(1, 200)
    view = view_of(container)
    # Repeats and overlaps; batches end mid-session, so a batch's reads must see
    # the writes that came before it in the same pipelined transaction.
    feed = ListFeed([log[:5], log[:5], log[3:17], log[10:], log])
    runner = ProjectionRunner(
        [view], mapper=container.sessions.mapper, feed=feed, bridge=container.bridge
    )
    await runner.run()

    assert runner.progress[view.name].applied == len(log)
    assert feed.acked == 5
    assert view.position() == log[-1].id
    assert_view_is_the_fold(container, sids)
    rows = await container.bridge(view.all_rows)

    again = ProjectionRunner(
        [view], mapper=container.sessions.mapper, feed=ListFeed([log]), bridge=container.bridge
    )
    await again.run()
    assert again.progress[view.name].applied == 0
    assert await container.bridge(view.all_rows) == rows


async def test_a_rebuilt_view_equals_the_live_one_row_for_row(
    container: Container, services: Services
) -> None:
    sids = [working_session(container, findings=i) for i in range(4)]
    container.sessions.archive_session(sids[0])
    view = view_of(container)
    head = container.recorder.max_notification_id() or 0
    assert await container.bridge(view.wait_for, head, 30.0)
    live = await container.bridge(view.all_rows)
    assert len([row for row in live if "state" in row]) == 4  # a row a session, then lines

    report = await container.bridge(rebuild, view, container.recorder, container.sessions.mapper)
    assert report.events == head and report.position == head
    assert await container.bridge(view.all_rows) == live
    assert_view_is_the_fold(container, sids)


async def test_a_batch_of_interleaved_sessions_writes_what_event_by_event_writes(
    container: Container,
) -> None:
    """A batch folds each session it touches once, in memory: two sessions written in
    turns, in batches of every size (the whole log in one, batches that end mid-run),
    leave the rows a rebuild, event by event, leaves."""
    app = container.sessions
    a, b = working_session(container), working_session(container, findings=3)
    for sid in (a, b):  # in turns: each session's events are spread over the log
        app.note_progress(sid, "back to it")
        app.request_tool_call(sid, "t9", "web_search", {"q": "y"})
    for sid in (a, b):
        app.record_tool_result(sid, "t9", "error", "no answer", error="timed out")
        app.record_tool_result(sid, "t3", "success", "1")
        app.stop_active_run(sid, "enough")
    log = container.recorder.select_notifications(1, 1000)
    view = view_of(container)
    await container.bridge(rebuild, view, container.recorder, container.sessions.mapper)
    expected = await container.bridge(view.all_rows)
    assert_view_is_the_fold(container, [a, b])
    for size in (len(log), 7, 2):
        await container.bridge(cleared, view)
        batches = [log[i : i + size] for i in range(0, len(log), size)]
        runner = ProjectionRunner(
            [view],
            mapper=container.sessions.mapper,
            feed=ListFeed(batches),
            bridge=container.bridge,
        )
        await runner.run()
        assert await container.bridge(view.all_rows) == expected, f"batches of {size}"


def cleared(view: WorkingMemoryView) -> None:
    with view.datastore.transaction(commit=True) as curs:
        view.clear(curs)


def runs(container: Container, sid: UUID, count: int) -> None:
    """`count` runs of the session, each two lines of its progress log."""
    app = container.sessions
    for _ in range(count):
        run = uuid4()
        app.request_run(sid, run)
        app.start_run(sid, run, "w1")
        app.complete_run(sid, run)


def stored_bytes(view: WorkingMemoryView, sid: UUID) -> tuple[int, int]:
    """The session's row and its progress lines, in bytes as Postgres stores them."""
    with view.datastore.transaction(commit=False) as curs:
        curs.execute(
            "SELECT (SELECT pg_column_size(w.*) FROM working_memory_view w WHERE session_id = %s)"
            " AS row, (SELECT coalesce(sum(pg_column_size(p.*)), 0) FROM working_memory_progress p"
            " WHERE session_id = %s) AS lines",
            (sid, sid),
        )
        found = curs.fetchone()
        assert found is not None
        return int(found["row"]), int(found["lines"])


async def test_a_run_writes_its_own_progress_lines_not_the_whole_log_again(
    container: Container,
) -> None:
    """The progress log grows by two lines a run for as long as the session lives: what a
    run writes stays the same at run 20 and at run 200, and reads still show every line."""
    sid = working_session(container)
    container.sessions.stop_active_run(sid, "enough")
    view = view_of(container)

    async def project() -> None:
        log = container.recorder.select_notifications(view.position() + 1, 10_000)
        feed = ListFeed([log[i : i + 50] for i in range(0, len(log), 50)])
        mapper, bridge = container.sessions.mapper, container.bridge
        await ProjectionRunner([view], mapper=mapper, feed=feed, bridge=bridge).run()

    runs(container, sid, 20)
    await project()
    row_at_20, lines_at_20 = stored_bytes(view, sid)
    runs(container, sid, 180)
    await project()
    row_at_200, lines_at_200 = stored_bytes(view, sid)

    assert row_at_200 <= row_at_20 + 16, "the session's row does not grow with its runs"
    per_run = (lines_at_200 - lines_at_20) / 180
    assert per_run <= 2 * (lines_at_20 / (2 * 20 + 3)) + 16, "lines: their own bytes, once"
    assert_view_is_the_fold(container, [sid])
    memory = view.get(sid)
    assert memory is not None and memory.progress.count(" completed (end_turn)") == 200


async def test_a_row_written_before_the_lines_had_a_table_shows_them_and_moves_them(
    container: Container,
) -> None:
    """A row whose state still holds its progress lines (written by the view before they
    had a table of their own) shows them, and hands them to the table at its next change."""
    sid = working_session(container)
    view = view_of(container)
    await container.bridge(rebuild, view, container.recorder, container.sessions.mapper)
    expected = pure_state(container, sid)
    with view.datastore.transaction(commit=True) as curs:  # as the view used to leave it
        curs.execute("DELETE FROM working_memory_progress WHERE session_id = %s", (sid,))
        curs.execute(
            "UPDATE working_memory_view SET state = %s WHERE session_id = %s",
            (Jsonb(expected.to_json()), sid),
        )
    assert view.get(sid) == render(expected)

    container.sessions.note_progress(sid, "one more line")
    log = container.recorder.select_notifications(view.position() + 1, 100)
    mapper, bridge = container.sessions.mapper, container.bridge
    await ProjectionRunner([view], mapper=mapper, feed=ListFeed([log]), bridge=bridge).run()
    assert_view_is_the_fold(container, [sid])
    with view.datastore.transaction(commit=False) as curs:
        curs.execute("SELECT state FROM working_memory_view WHERE session_id = %s", (sid,))
        row = curs.fetchone()
    assert row is not None and row["state"]["progress"] == []
    assert row["state"]["progress_count"] == len(expected.progress) + 1
