"""A long session written fast, straight through the session commands a run uses: turns
with their calls, results with sources and plan notes, failures, a skill, compactions."""

from __future__ import annotations

from uuid import UUID, uuid4

from application.sessions import SessionService
from application.steps import CallRequest, CallsStep, PlanNote, ResultStep, TurnStep
from domain.conversation import ModelTurn, TextBlock, ToolUseBlock, Usage
from domain.values import ModelCallCost, PlanItem, SkillSpec, SourceSeen


def start(sessions: SessionService) -> tuple[UUID, UUID]:
    """A new session with a run started for a user message: (session, run)."""
    sid = sessions.start_session(workspace_id=uuid4(), owner_id=uuid4(), title="long").session_id
    run_id = uuid4()
    sessions.submit_message(sid, "Find out how heat pumps work in the cold.", run_id)
    sessions.start_run(sid, run_id, "test-worker")
    return sid, run_id


def step(sessions: SessionService, sid: UUID, run_id: UUID, i: int, *, compact_every: int) -> int:
    """One step (turn, call, result, and now and then sources, a plan, a compaction, a
    skill); the session's version after it."""
    use = f"t{i}"
    turn = ModelTurn(
        (TextBlock(f"Step {i}: searching."), ToolUseBlock(use, "search", {"query": f"q{i}"})),
        "tool_use", Usage(100 + i, 20), "test-model",
    )  # fmt: skip
    calls = CallsStep((CallRequest(use, "search", {"query": f"q{i}"}),))
    sessions.record_turn_and_calls(sid, TurnStep(run_id, turn, 5, ModelCallCost(), calls=calls))
    seen = (SourceSeen(f"https://example.org/{i % 7}", f"Page {i % 7}", "snippet"),)
    notes = (PlanNote([PlanItem(f"step {j}", "done" if j < i else "pending") for j in range(3)]),)
    failed = i % 4 == 3
    result = ResultStep(
        use, "error" if failed else "success",
        "HTTP 503" if failed else f"results for q{i} {{{{source:0}}}}",
        error="HTTP 503" if failed else None, duration_ms=3,
        notes=notes if i % 5 == 0 else (), seen=() if failed or i % 2 else seen,
    )  # fmt: skip
    version = sessions.record_result_and_effects(sid, result).version
    if i == 3:
        skill = SkillSpec("research", "1", "Search, then read, then write.")
        version = sessions.activate_skill(sid, skill, 0.9, "keyword").version
    if compact_every and i % compact_every == compact_every - 1:
        summary = f"summary through step {i}"
        version = sessions.record_compaction(sid, summary, version - 2, 5000, 500).version
    return version


def long_session(sessions: SessionService, steps: int, *, compact_every: int = 0) -> UUID:
    sid, run_id = start(sessions)
    for i in range(steps):
        step(sessions, sid, run_id, i, compact_every=compact_every)
    return sid
