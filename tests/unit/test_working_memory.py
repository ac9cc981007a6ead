"""Working memory folded from a real session's events, on the in-memory event store."""

from __future__ import annotations

import json
from datetime import UTC
from typing import cast
from uuid import UUID, uuid4

from application.sessions import SessionService
from domain.conversation import ModelTurn, TextBlock, Usage
from domain.events import SessionEvent
from domain.values import Citation, PlanItem
from domain.working_memory import WorkingMemory, WorkingMemoryState, fold, fold_all
from domain.working_memory_render import render


def start(sessions: SessionService, title: str = "Compare laptops") -> UUID:
    return sessions.start_session(workspace_id=uuid4(), owner_id=uuid4(), title=title).session_id


def events(sessions: SessionService, session_id: UUID) -> list[SessionEvent]:
    return cast(list[SessionEvent], list(sessions.session_events(session_id)))


def memory(sessions: SessionService, session_id: UUID) -> WorkingMemory:
    return render(fold_all(events(sessions, session_id)))


def hms(event: SessionEvent) -> str:
    return event.timestamp.astimezone(UTC).strftime("%H:%M:%S")


def test_a_new_session_has_three_documents_that_say_nothing_yet(sessions: SessionService) -> None:
    wm = memory(sessions, start(sessions))
    assert wm.task_plan == "# Task Plan\n\nGoal: Compare laptops\n\n(nothing yet)\n"
    assert wm.findings == "# Findings\n\n(nothing yet)\n"
    assert wm.progress == "# Progress\n\n(nothing yet)\n"
    assert wm.plan_counts == {"done": 0, "in_progress": 0, "pending": 0, "skipped": 0}
    assert (wm.finding_count, wm.citation_count, wm.source_count, wm.version) == (0, 0, 0, 1)
    assert render(WorkingMemoryState()).task_plan == "# Task Plan\n\n(nothing yet)\n"


def test_a_new_plan_replaces_the_old_one_and_shows_each_status(sessions: SessionService) -> None:
    sid = start(sessions)
    sessions.update_plan(sid, [PlanItem("Old step", "pending")])
    sessions.update_plan(
        sid,
        [
            PlanItem("Search reviews", "done"),
            PlanItem("Compare\nprices", "in_progress"),
            PlanItem("Write report", "pending"),
            PlanItem("Ask the vendor", "skipped"),
            PlanItem("Pick one", "done"),
        ],
    )
    wm = memory(sessions, sid)
    assert wm.task_plan == (
        "# Task Plan\n\nGoal: Compare laptops\n\n2/5 done\n\n"
        "- [x] Search reviews\n- [~] Compare prices\n- [ ] Write report\n"
        "- [-] Ask the vendor\n- [x] Pick one\n"
    )
    assert "Old step" not in wm.task_plan
    assert wm.plan_counts == {"done": 2, "in_progress": 1, "pending": 1, "skipped": 1}
    assert wm.version == 3


def test_a_renamed_session_changes_the_goal(sessions: SessionService) -> None:
    sid = start(sessions)
    sessions.rename_session(sid, "Compare tablets")
    assert "Goal: Compare tablets\n" in memory(sessions, sid).task_plan


def test_findings_list_their_citations_and_each_source_once(sessions: SessionService) -> None:
    sid = start(sessions)
    sessions.record_finding(
        sid,
        "The X1 weighs 1.1 kg.\nIts battery lasts 12 h.",
        [
            Citation.of(
                {"url": "https://a.example/x1", "title": "X1 review", "blob_ref": "sha256:aa"}
            ),
            Citation.of({"url": "https://b.example/specs"}),
        ],
    )
    sessions.record_finding(
        sid,
        "The X1 costs 1500 EUR.",
        [
            Citation.of({"url": "https://b.example/specs", "title": "Specs [2024]"}),
            Citation.of({"url": "https://a.example/x1"}),
        ],
    )
    sessions.record_finding(sid, "Nobody sells the Y2 any more.", [])
    wm = memory(sessions, sid)
    assert wm.findings == (
        "# Findings\n\n"
        "1. The X1 weighs 1.1 kg.\n   Its battery lasts 12 h.\n"
        "   - [X1 review](https://a.example/x1) (saved as `sha256:aa`)\n"
        "   - https://b.example/specs\n"
        "2. The X1 costs 1500 EUR.\n"
        "   - [Specs \\[2024\\]](https://b.example/specs)\n"
        "   - https://a.example/x1\n"
        "3. Nobody sells the Y2 any more.\n\n"
        "## Sources\n\n"
        "- [X1 review](https://a.example/x1)\n"
        "- [Specs \\[2024\\]](https://b.example/specs)\n"
    )
    assert (wm.finding_count, wm.citation_count, wm.source_count) == (3, 4, 2)


def test_the_progress_log_keeps_notes_failures_strikes_and_runs_in_order(
    sessions: SessionService,
) -> None:
    sid, run = start(sessions), uuid4()
    sessions.request_run(sid, run)
    sessions.start_run(sid, run, "w1")
    sessions.note_progress(sid, "Searched for reviews")
    sessions.request_tool_call(sid, "t1", "web_search", {"q": "x1"})
    sessions.record_tool_result(
        sid, "t1", "error", "search failed", error="HTTP 503\nfrom upstream"
    )
    sessions.request_tool_call(sid, "t2", "read_page", {"url": "https://a.example"})
    sessions.record_tool_result(sid, "t2", "success", "read 3 kB")
    sessions.request_tool_call(sid, "t3", "web_search", {"q": "x1 price"})
    sessions.record_tool_result(sid, "t3", "cancelled", "declined by the user")
    sessions.record_strike(sid, "web_search", "HTTP 503", 3)
    sessions.complete_run(sid, run)
    log = events(sessions, sid)
    at = {type(e).__name__ + str(e.originator_version): hms(e) for e in log}
    wm = memory(sessions, sid)
    assert wm.progress == (
        "# Progress\n\n"
        f"- {at['RunStarted3']} run {str(run)[:8]} started on worker w1\n"
        f"- {at['ProgressNoted4']} Searched for reviews\n"
        f"- {at['ToolResultRecorded6']} tool web_search failed: "
        "HTTP 503 from upstream (search failed)\n"
        f"- {at['StrikeRecorded11']} 3-strike: tool web_search failing with HTTP 503 (strike 3)\n"
        f"- {at['RunCompleted12']} run {str(run)[:8]} completed (end_turn)\n"
    )
    assert "read_page" not in wm.progress and "declined" not in wm.progress
    assert wm.version == 12 and wm.updated_at == log[-1].timestamp
    assert fold_all(log).open_calls == {}


def test_a_call_interrupted_by_a_fork_is_kept_as_a_failure_naming_its_tool(
    sessions: SessionService,
) -> None:
    sid, run = start(sessions), uuid4()
    sessions.request_run(sid, run)
    sessions.start_run(sid, run, "w1")
    receipt = sessions.request_tool_call(sid, "t1", "run_code", {"code": "1/0"})
    child = sessions.fork_session(sid, receipt.version).session_id
    lines = memory(sessions, child).progress.splitlines()
    interrupted = [line for line in lines if " tool run_code interrupted: " in line]
    assert len(interrupted) == 1 and "forked at version 4" in interrupted[0]
    assert lines[-1].endswith(f"run {str(run)[:8]} stopped: forked at version 4")


def test_events_that_change_no_document_leave_the_state_untouched(sessions: SessionService) -> None:
    sid, run = start(sessions), uuid4()
    sessions.append_user_message(sid, "hello")
    sessions.request_run(sid, run)
    turn = ModelTurn((TextBlock("hi"),), "end_turn", Usage(1, 1, 0, 0), "m")
    sessions.start_run(sid, run, "w1")
    sessions.record_assistant_turn(sid, run, turn, 5)
    log = events(sessions, sid)
    state = fold_all(log[:1])
    for event in (log[1], log[2], log[4]):  # message, run request, turn
        assert fold(state, event) is state


def test_the_state_survives_a_json_round_trip(sessions: SessionService) -> None:
    sid = start(sessions)
    sessions.update_plan(sid, [PlanItem("Search", "in_progress")])
    sessions.record_finding(
        sid, "Found it", [Citation.of({"url": "https://a.example", "title": "A"})]
    )
    sessions.note_progress(sid, "Half way")
    sessions.request_tool_call(sid, "t1", "web_search", {"q": "x"})
    state = fold_all(events(sessions, sid))
    assert state.open_calls == {"t1": "web_search"}
    stored = json.loads(json.dumps(state.to_json()))
    assert WorkingMemoryState.from_json(stored) == state
    assert render(WorkingMemoryState.from_json(stored)) == render(state)
