"""Working memory folded from a real session's events, on the in-memory event store."""

from __future__ import annotations

import json
from datetime import UTC
from typing import cast
from uuid import UUID, uuid4

import pytest

from application.sessions import SessionService
from domain.conversation import ModelTurn, TextBlock, Usage
from domain.values import Citation, PlanItem
from domain.events import SessionEvent
from domain.working_memory import WorkingMemory, WorkingMemoryState, fold, fold_all
from domain.working_memory_render import render


@pytest.fixture
def app() -> SessionService:
    return SessionService(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})


def start(app: SessionService, title: str = "Compare laptops") -> UUID:
    return app.start_session(workspace_id=uuid4(), owner_id=uuid4(), title=title).session_id


def events(app: SessionService, session_id: UUID) -> list[SessionEvent]:
    return cast(list[SessionEvent], list(app.session_events(session_id)))


def memory(app: SessionService, session_id: UUID) -> WorkingMemory:
    return render(fold_all(events(app, session_id)))


def hms(event: SessionEvent) -> str:
    return event.timestamp.astimezone(UTC).strftime("%H:%M:%S")


def test_a_new_session_has_three_documents_that_say_nothing_yet(app: SessionService) -> None:
    wm = memory(app, start(app))
    assert wm.task_plan == "# Task Plan\n\nGoal: Compare laptops\n\n(nothing yet)\n"
    assert wm.findings == "# Findings\n\n(nothing yet)\n"
    assert wm.progress == "# Progress\n\n(nothing yet)\n"
    assert wm.plan_counts == {"done": 0, "in_progress": 0, "pending": 0, "skipped": 0}
    assert (wm.finding_count, wm.citation_count, wm.source_count, wm.version) == (0, 0, 0, 1)
    assert render(WorkingMemoryState()).task_plan == "# Task Plan\n\n(nothing yet)\n"


def test_a_new_plan_replaces_the_old_one_and_shows_each_status(app: SessionService) -> None:
    sid = start(app)
    app.update_plan(sid, [PlanItem("Old step", "pending")])
    app.update_plan(
        sid,
        [
            PlanItem("Search reviews", "done"),
            PlanItem("Compare\nprices", "in_progress"),
            PlanItem("Write report", "pending"),
            PlanItem("Ask the vendor", "skipped"),
            PlanItem("Pick one", "done"),
        ],
    )
    wm = memory(app, sid)
    assert wm.task_plan == (
        "# Task Plan\n\nGoal: Compare laptops\n\n2/5 done\n\n"
        "- [x] Search reviews\n- [~] Compare prices\n- [ ] Write report\n"
        "- [-] Ask the vendor\n- [x] Pick one\n"
    )
    assert "Old step" not in wm.task_plan
    assert wm.plan_counts == {"done": 2, "in_progress": 1, "pending": 1, "skipped": 1}
    assert wm.version == 3


def test_a_renamed_session_changes_the_goal(app: SessionService) -> None:
    sid = start(app)
    app.rename_session(sid, "Compare tablets")
    assert "Goal: Compare tablets\n" in memory(app, sid).task_plan


def test_findings_list_their_citations_and_each_source_once(app: SessionService) -> None:
    sid = start(app)
    app.record_finding(
        sid,
        "The X1 weighs 1.1 kg.\nIts battery lasts 12 h.",
        [
            Citation.of(
                {"url": "https://a.example/x1", "title": "X1 review", "blob_ref": "sha256:aa"}
            ),
            Citation.of({"url": "https://b.example/specs"}),
        ],
    )
    app.record_finding(
        sid,
        "The X1 costs 1500 EUR.",
        [
            Citation.of({"url": "https://b.example/specs", "title": "Specs [2024]"}),
            Citation.of({"url": "https://a.example/x1"}),
        ],
    )
    app.record_finding(sid, "Nobody sells the Y2 any more.", [])
    wm = memory(app, sid)
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
    app: SessionService,
) -> None:
    sid, run = start(app), uuid4()
    app.request_run(sid, run)
    app.start_run(sid, run, "w1")
    app.note_progress(sid, "Searched for reviews")
    app.request_tool_call(sid, "t1", "web_search", {"q": "x1"})
    app.record_tool_result(sid, "t1", "error", "search failed", error="HTTP 503\nfrom upstream")
    app.request_tool_call(sid, "t2", "read_page", {"url": "https://a.example"})
    app.record_tool_result(sid, "t2", "success", "read 3 kB")
    app.request_tool_call(sid, "t3", "web_search", {"q": "x1 price"})
    app.record_tool_result(sid, "t3", "cancelled", "declined by the user")
    app.record_strike(sid, "web_search", "HTTP 503", 3)
    app.complete_run(sid, run)
    log = events(app, sid)
    at = {type(e).__name__ + str(e.originator_version): hms(e) for e in log}
    wm = memory(app, sid)
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
    app: SessionService,
) -> None:
    sid, run = start(app), uuid4()
    app.request_run(sid, run)
    app.start_run(sid, run, "w1")
    receipt = app.request_tool_call(sid, "t1", "run_code", {"code": "1/0"})
    child = app.fork_session(sid, receipt.version).session_id
    lines = memory(app, child).progress.splitlines()
    interrupted = [line for line in lines if " tool run_code interrupted: " in line]
    assert len(interrupted) == 1 and "forked at version 4" in interrupted[0]
    assert lines[-1].endswith(f"run {str(run)[:8]} stopped: forked at version 4")


def test_events_that_change_no_document_leave_the_state_untouched(app: SessionService) -> None:
    sid, run = start(app), uuid4()
    app.append_user_message(sid, "hello")
    app.request_run(sid, run)
    turn = ModelTurn((TextBlock("hi"),), "end_turn", Usage(1, 1, 0, 0), "m")
    app.start_run(sid, run, "w1")
    app.record_assistant_turn(sid, run, turn, 5)
    log = events(app, sid)
    state = fold_all(log[:1])
    for event in (log[1], log[2], log[4]):  # message, run request, turn
        assert fold(state, event) is state


def test_the_state_survives_a_json_round_trip(app: SessionService) -> None:
    sid = start(app)
    app.update_plan(sid, [PlanItem("Search", "in_progress")])
    app.record_finding(sid, "Found it", [Citation.of({"url": "https://a.example", "title": "A"})])
    app.note_progress(sid, "Half way")
    app.request_tool_call(sid, "t1", "web_search", {"q": "x"})
    state = fold_all(events(app, sid))
    assert state.open_calls == {"t1": "web_search"}
    stored = json.loads(json.dumps(state.to_json()))
    assert WorkingMemoryState.from_json(stored) == state
    assert render(WorkingMemoryState.from_json(stored)) == render(state)
