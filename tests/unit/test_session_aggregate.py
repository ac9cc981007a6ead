"""The AgentSession aggregate and its use cases, on the in-memory event store."""

from __future__ import annotations

from uuid import UUID, uuid4

import pytest

from adapters.bootstrap.in_memory import in_memory_sessions
from application.sessions import SessionService
from domain.conversation import ModelTurn, TextBlock, ThinkingBlock, ToolUseBlock, Usage
from domain.errors import (
    Conflict,
    InvalidCommand,
    MessageTooLarge,
    RunAlreadyActive,
    SessionClosed,
    SessionNotFound,
)
from domain.values import MAX_MESSAGE_BYTES, PlanItem


def start(sessions: SessionService) -> UUID:
    return sessions.start_session(
        workspace_id=uuid4(), owner_id=uuid4(), title="Research"
    ).session_id


def kinds(sessions: SessionService, session_id: UUID) -> list[str]:
    return [type(e).__name__ for e in sessions.session_events(session_id)]


def test_a_started_session_records_who_where_and_what() -> None:
    sessions = in_memory_sessions()
    workspace, owner = uuid4(), uuid4()
    receipt = sessions.start_session(
        workspace_id=workspace, owner_id=owner, title="  Market scan ", task_type="deep-research"
    )
    session = sessions.get_session(receipt.session_id)
    assert (session.workspace_id, session.owner_id) == (workspace, owner)
    assert session.title == "Market scan"
    assert session.status == "created"
    assert receipt.version == 1 and receipt.notification_id == 1


def test_each_event_carries_only_what_is_new(sessions: SessionService) -> None:
    sid = start(sessions)
    sessions.append_user_message(sid, "first")
    sessions.append_user_message(sid, "second")
    events = list(sessions.session_events(sid))
    assert [e.text for e in events[1:]] == ["first", "second"]  # type: ignore[attr-defined]
    assert "first" not in repr(events[2].__dict__)


def test_a_whole_run_is_recorded_in_order(sessions: SessionService) -> None:
    sid, run = start(sessions), uuid4()
    sessions.append_user_message(sid, "plan a trip")
    sessions.request_run(sid, run)
    sessions.start_run(sid, run, worker="w1")
    turn = ModelTurn(
        content=(
            ThinkingBlock("think", signature="sig"),
            TextBlock("Let me plan."),
            ToolUseBlock("toolu_1", "update_plan", {"items": []}),
        ),
        stop_reason="tool_use",
        usage=Usage(100, 20, 5, 7),
        model="claude",
    )
    sessions.record_assistant_turn(sid, run, turn, latency_ms=120)
    sessions.request_tool_call(sid, "toolu_1", "update_plan", {"items": []})
    sessions.update_plan(sid, [PlanItem("Book flights", "in_progress")])
    sessions.record_tool_result(sid, "toolu_1", "success", "plan updated", duration_ms=3)
    sessions.complete_run(sid, run)
    assert kinds(sessions, sid) == [
        "SessionStarted", "UserMessageAppended", "RunRequested", "RunStarted",
        "AssistantTurnRecorded", "ToolCallRequested", "PlanUpdated", "ToolResultRecorded",
        "RunCompleted",
    ]  # fmt: skip
    recorded = list(sessions.session_events(sid))[4]
    assert recorded.content[0] == {"type": "thinking", "thinking": "think", "signature": "sig"}  # type: ignore[attr-defined]
    assert (recorded.input_tokens, recorded.output_tokens) == (100, 20)  # type: ignore[attr-defined]
    assert (recorded.cache_read_tokens, recorded.cache_write_tokens) == (5, 7)  # type: ignore[attr-defined]
    assert sessions.get_session(sid).status == "completed"


def test_unknown_session_is_not_found(sessions: SessionService) -> None:
    with pytest.raises(SessionNotFound):
        sessions.append_user_message(uuid4(), "hello")


def test_stale_expected_version_is_a_conflict_and_writes_nothing(sessions: SessionService) -> None:
    sid = start(sessions)
    sessions.append_user_message(sid, "one", expected_version=1)
    with pytest.raises(Conflict):
        sessions.append_user_message(sid, "two", expected_version=1)
    assert sessions.get_session(sid).version == 2


def test_a_message_over_one_mebibyte_is_refused_before_anything_is_written(
    sessions: SessionService,
) -> None:
    sid = start(sessions)
    with pytest.raises(MessageTooLarge) as refused:
        sessions.append_user_message(sid, "é" * (MAX_MESSAGE_BYTES // 2 + 1))
    assert refused.value.size > MAX_MESSAGE_BYTES
    assert kinds(sessions, sid) == ["SessionStarted"]
    sessions.append_user_message(sid, "x" * MAX_MESSAGE_BYTES)  # exactly the limit is fine
    assert sessions.get_session(sid).version == 2


def test_only_one_run_is_active_at_a_time(sessions: SessionService) -> None:
    sid, first = start(sessions), uuid4()
    sessions.request_run(sid, first)
    with pytest.raises(RunAlreadyActive):
        sessions.request_run(sid, uuid4())
    sessions.stop_run(sid, first)
    sessions.request_run(sid, uuid4())
    assert sessions.get_session(sid).status == "stopped"


def test_commands_for_another_run_are_refused(sessions: SessionService) -> None:
    sid, run = start(sessions), uuid4()
    sessions.request_run(sid, run)
    with pytest.raises(InvalidCommand):
        sessions.complete_run(sid, uuid4())


def test_a_tool_result_needs_an_open_tool_call(sessions: SessionService) -> None:
    sid = start(sessions)
    with pytest.raises(InvalidCommand):
        sessions.record_tool_result(sid, "toolu_missing", "success", "done")
    sessions.request_tool_call(sid, "toolu_1", "web_search", {"query": "x"}, risk="safe")
    sessions.record_tool_result(sid, "toolu_1", "error", "timed out", error="timeout")
    with pytest.raises(InvalidCommand):
        sessions.record_tool_result(sid, "toolu_1", "success", "again")


def test_a_failed_run_interrupts_its_open_calls_but_not_a_persons(
    sessions: SessionService,
) -> None:
    sid, run = start(sessions), uuid4()
    sessions.request_run(sid, run)
    sessions.start_run(sid, run, worker="w1")
    sessions.request_tool_call(sid, "toolu_1", "web_search", {"query": "x"})
    sessions.request_tool_call(sid, "manual_1", "web_search", {"query": "y"})
    sessions.fail_run(sid, run, "the worker died", "RUN_FAILED")
    assert kinds(sessions, sid)[-2:] == ["ToolResultRecorded", "RunFailed"]
    session = sessions.get_session(sid)
    assert list(session.open_tool_calls) == ["manual_1"]  # a person's call, outside the run
    result = list(sessions.session_events(sid))[-2]
    assert (result.status, result.error) == ("interrupted", "failed")  # type: ignore[attr-defined]
    assert "the worker died" in result.summary  # type: ignore[attr-defined]


def test_an_archived_session_takes_no_more_messages(sessions: SessionService) -> None:
    sid = start(sessions)
    sessions.rename_session(sid, "Renamed")
    sessions.archive_session(sid)
    with pytest.raises(SessionClosed):
        sessions.append_user_message(sid, "hello?")
    session = sessions.get_session(sid)
    assert session.archived and session.title == "Renamed"


@pytest.mark.parametrize("title", ["", "   ", "x" * 501])
def test_titles_must_be_sensible(sessions: SessionService, title: str) -> None:
    with pytest.raises(InvalidCommand):
        sessions.start_session(workspace_id=uuid4(), owner_id=uuid4(), title=title)


def test_plan_items_need_a_title_and_a_known_status(sessions: SessionService) -> None:
    sid = start(sessions)
    with pytest.raises(InvalidCommand):
        sessions.update_plan(sid, [PlanItem("ok", "someday")])
    with pytest.raises(InvalidCommand):
        sessions.update_plan(sid, [PlanItem(" ")])


def test_a_session_can_be_read_at_an_earlier_version(sessions: SessionService) -> None:
    sid = start(sessions)
    sessions.rename_session(sid, "Second")
    assert sessions.get_session(sid, version=1).title == "Research"
    assert sessions.get_session(sid).title == "Second"
