"""Events stored before events were typed still load, and fold to what they folded to then.

`tests/fixtures/stored_events_v1.json` was written by the code as it was before typed
events (stored events, one snapshot, and that code's folds of them); it is never
regenerated.
"""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import pytest
from eventsourcing.persistence import StoredEvent
from eventsourcing.utils import get_topic

from adapters.bootstrap.in_memory import in_memory_sessions
from adapters.http.streams.sse import payloads
from application.sessions import SessionService
from domain.context import ContextFrame, build_request
from domain.conversation import ToolSpec, request_text
from domain.events import SESSION_EVENT_CLASSES, SessionEvent
from domain.session import AgentSession
from domain.values import Citation, PlanItem, SessionSettings
from domain.working_memory import fold_all
from domain.working_memory_render import render
from tests.unit.sse_check import checked, without_timestamps

FIXTURE = Path(__file__).parent.parent / "fixtures" / "stored_events_v1.json"


@pytest.fixture(scope="module")
def fixture() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(FIXTURE.read_text())
    return data


def stored(raw: dict[str, Any]) -> StoredEvent:
    return StoredEvent(
        originator_id=UUID(raw["originator_id"]),
        originator_version=raw["originator_version"],
        topic=raw["topic"],
        state=raw["state"].encode(),
    )


def loaded_app(fixture: dict[str, Any], *, snapshots: bool) -> SessionService:
    app = in_memory_sessions()
    app.recorder.insert_events([stored(e) for e in fixture["events"]])
    if snapshots:
        assert app.snapshots is not None
        app.snapshots.recorder.insert_events([stored(e) for e in fixture["snapshots"]])
    return app


def session_id(fixture: dict[str, Any]) -> UUID:
    return UUID(fixture["session_id"])


def events_of(fixture: dict[str, Any]) -> list[SessionEvent]:
    app = loaded_app(fixture, snapshots=False)
    return list(app.session_events(session_id(fixture)))


@pytest.mark.parametrize("snapshots", [False, True], ids=["from-events", "from-snapshot"])
def test_old_events_fold_to_the_same_session(fixture: dict[str, Any], snapshots: bool) -> None:
    app = loaded_app(fixture, snapshots=snapshots)
    session = app.get_session(session_id(fixture))
    expected = dict(fixture["expected"]["aggregate"])
    assert session.settings == SessionSettings.of(expected.pop("settings"))
    for name, value in expected.items():
        actual = getattr(session, name)
        assert (str(actual) if isinstance(actual, UUID) else actual) == value, name
    assert session.version == len(fixture["events"])


def test_old_values_load_as_value_objects(fixture: dict[str, Any]) -> None:
    events = events_of(fixture)
    plans = [e for e in events if isinstance(e, AgentSession.PlanUpdated)]
    findings = [e for e in events if isinstance(e, AgentSession.FindingRecorded)]
    assert plans and all(isinstance(i, PlanItem) for p in plans for i in p.items)
    assert findings[0].citations == [Citation("https://example.com/ev", "EV report", "sha256:def")]


def test_old_events_fold_to_the_same_working_memory(fixture: dict[str, Any]) -> None:
    memory = render(fold_all(events_of(fixture)))
    expected = fixture["expected"]["working_memory"]
    assert (memory.task_plan, memory.findings, memory.progress) == (
        expected["task_plan"],
        expected["findings"],
        expected["progress"],
    )


def test_old_events_fold_to_the_same_model_request(fixture: dict[str, Any]) -> None:
    frame = ContextFrame(
        "You are TokenDance.",
        (ToolSpec("update_plan", "Update the plan", {"type": "object"}),),
        model="m",
        max_tokens=100,
    )
    request = build_request(events_of(fixture), frame)
    assert request_text(request) == fixture["expected"]["context_request"]
    assert [m.cache_breakpoint for m in request.messages] == fixture["expected"][
        "context_breakpoints"
    ]


def test_new_events_round_trip_through_the_store(fixture: dict[str, Any]) -> None:
    old = loaded_app(fixture, snapshots=False)
    events = list(old.session_events(session_id(fixture)))
    again = in_memory_sessions()
    again.recorder.insert_events([again.mapper.to_stored_event(e) for e in events])
    assert list(again.session_events(session_id(fixture))) == events


def test_events_written_now_keep_the_topics_stored_before() -> None:
    """Each part of the session records the session's own class of its events."""
    sessions, run = in_memory_sessions(), uuid4()
    sid = sessions.start_session(workspace_id=uuid4(), owner_id=uuid4(), title="t").session_id
    sessions.request_run(sid, run)  # runs
    sessions.request_tool_call(sid, "toolu_1", "update_plan", {})  # tool calls
    sessions.update_plan(sid, [PlanItem("Look", "in_progress")])  # working memory
    sessions.record_strike(sid, "update_plan", "sig", 1)  # steering
    sessions.fail_run(sid, run, "gone")
    topics = [e.topic for e in sessions.recorder.select_events(sid)]
    assert topics == [
        f"domain.session:AgentSession.{name}"
        for name in (
            "SessionStarted", "RunRequested", "ToolCallRequested", "PlanUpdated",
            "StrikeRecorded", "ToolResultRecorded", "RunFailed",
        )
    ]  # fmt: skip
    assert all(
        get_topic(c).startswith("domain.session:AgentSession.") for c in SESSION_EVENT_CLASSES
    )


def test_old_events_map_to_the_sse_payloads_of_the_same_events_written_now(
    fixture: dict[str, Any],
) -> None:
    old = events_of(fixture)
    now = datetime.now(UTC)
    again = in_memory_sessions()
    again.recorder.insert_events(
        [again.mapper.to_stored_event(dataclasses.replace(e, timestamp=now)) for e in old]
    )
    new = list(again.session_events(session_id(fixture)))
    assert [e.timestamp for e in new] == [now] * len(old)

    def documents(events: list[SessionEvent]) -> list[object]:
        return [without_timestamps(checked(p)) for e in events for p in payloads(e)]

    assert documents(old) == documents(new)
    assert len(documents(old)) > len(old)  # a turn with thinking sends two payloads
