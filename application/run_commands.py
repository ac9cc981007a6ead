"""The commands an agent run writes to its session: the run's lifecycle, its turns, tool
calls and results, approvals, notes, and what joins the conversation on the way.

Mixed into `SessionService`, which gets the session, calls it and saves it (`_change`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any
from uuid import UUID

from application.receipt import Receipt
from application.steps import CallsStep, ResultStep, TurnStep
from domain.budgets import ThresholdCrossing
from domain.conversation import ModelTurn
from domain.session import AgentSession
from domain.values import (
    ArtifactKind,
    Citation,
    CitedSource,
    ModelCallCost,
    PlanItem,
    RecalledMemory,
    RiskLevel,
    SkillActivation,
    SkillSpec,
    SourceSeen,
    ToolResultStatus,
)


class RunCommands:
    """What a run records, each command one save of its session."""

    def _change(
        self,
        session_id: UUID,
        command: Callable[[AgentSession], None],
        expected_version: int | None = None,
    ) -> Receipt:
        raise NotImplementedError  # `SessionService._change`

    def record_assistant_turn(
        self,
        session_id: UUID,
        run_id: UUID,
        turn: ModelTurn,
        latency_ms: int,
        cost: ModelCallCost | None = None,
        citations: Sequence[CitedSource] = (),
        unknown_markers: Sequence[int] = (),
    ) -> Receipt:
        """Record a finished turn with what it cost (default: unpriced) and what it cites."""
        cost = cost or ModelCallCost()
        return self._change(
            session_id,
            lambda s: s.record_assistant_turn(
                run_id, turn, latency_ms, cost, citations, unknown_markers
            ),
        )

    def request_tool_call(
        self,
        session_id: UUID,
        tool_use_id: str,
        tool: str,
        args: dict[str, object],
        risk: RiskLevel = "safe",
    ) -> Receipt:
        return self._change(
            session_id, lambda s: s.request_tool_call(tool_use_id, tool, args, risk)
        )

    def record_tool_result(
        self,
        session_id: UUID,
        tool_use_id: str,
        status: ToolResultStatus,
        summary: str,
        *,
        blob_ref: str | None = None,
        error: str | None = None,
        duration_ms: int = 0,
        sources: Sequence[int] = (),
    ) -> Receipt:
        return self._change(
            session_id,
            lambda s: s.record_tool_result(
                tool_use_id,
                status,
                summary,
                blob_ref=blob_ref,
                error=error,
                duration_ms=duration_ms,
                sources=sources,
            ),
        )

    def update_plan(self, session_id: UUID, items: list[PlanItem]) -> Receipt:
        return self._change(session_id, lambda s: s.update_plan(items))

    def request_run(
        self,
        session_id: UUID,
        run_id: UUID,
        *,
        requested_by: UUID | None = None,
        api_key_id: UUID | None = None,
    ) -> Receipt:
        return self._change(session_id, lambda s: s.request_run(run_id, requested_by, api_key_id))

    def start_run(self, session_id: UUID, run_id: UUID, worker: str) -> Receipt:
        return self._change(session_id, lambda s: s.start_run(run_id, worker))

    def complete_run(self, session_id: UUID, run_id: UUID, reason: str = "end_turn") -> Receipt:
        return self._change(session_id, lambda s: s.complete_run(run_id, reason))

    def fail_run(
        self, session_id: UUID, run_id: UUID, reason: str, error_code: str = "RUN_FAILED"
    ) -> Receipt:
        return self._change(session_id, lambda s: s.fail_run(run_id, reason, error_code))

    def stop_run(self, session_id: UUID, run_id: UUID, reason: str = "stopped by user") -> Receipt:
        return self._change(session_id, lambda s: s.stop_run(run_id, reason))

    def request_confirmation(
        self,
        session_id: UUID,
        action_id: str,
        tool_use_id: str,
        tool: str,
        args: dict[str, object],
        description: str,
    ) -> Receipt:
        return self._change(
            session_id,
            lambda s: s.request_confirmation(action_id, tool_use_id, tool, args, description),
        )

    def give_confirmation(
        self,
        session_id: UUID,
        action_id: str,
        approved: bool,
        feedback: str | None = None,
        by: str = "",
    ) -> Receipt:
        return self._change(
            session_id, lambda s: s.give_confirmation(action_id, approved, feedback, by)
        )

    def record_finding(self, session_id: UUID, text: str, citations: list[Citation]) -> Receipt:
        return self._change(session_id, lambda s: s.record_finding(text, citations))

    def note_progress(self, session_id: UUID, text: str) -> Receipt:
        return self._change(session_id, lambda s: s.note_progress(text))

    def record_strike(self, session_id: UUID, tool: str, signature: str, count: int) -> Receipt:
        return self._change(session_id, lambda s: s.record_strike(tool, signature, count))

    def request_reboot(
        self, session_id: UUID, questions: list[str], iterations_without_progress: int
    ) -> Receipt:
        return self._change(
            session_id, lambda s: s.request_reboot(questions, iterations_without_progress)
        )

    def use_fallback_model(
        self,
        session_id: UUID,
        run_id: UUID,
        from_model: str,
        to_model: str,
        reason: str,
        error_code: str,
    ) -> Receipt:
        """Record that `to_model` takes over the run's model calls from `from_model`."""
        return self._change(
            session_id,
            lambda s: s.use_fallback_model(run_id, from_model, to_model, reason, error_code),
        )

    def change_mcp_toolset(
        self,
        session_id: UUID,
        run_id: UUID,
        tools: list[dict[str, Any]],
        unavailable: list[dict[str, str]],
    ) -> Receipt:
        """Record the MCP tools the session's agent is offered from now on."""
        return self._change(session_id, lambda s: s.change_mcp_toolset(run_id, tools, unavailable))

    def record_compaction(
        self,
        session_id: UUID,
        summary: str,
        through_version: int,
        tokens_before: int,
        tokens_after: int,
        call: ModelTurn | None = None,
        cost: ModelCallCost | None = None,
    ) -> Receipt:
        """Record a summary and the model call (`call`) that wrote it (None: no call)."""
        cost = cost or ModelCallCost()
        return self._change(
            session_id,
            lambda s: s.record_compaction(
                summary, through_version, tokens_before, tokens_after, call, cost
            ),
        )

    def note_budget_threshold(self, session_id: UUID, crossing: ThresholdCrossing) -> Receipt:
        """Tell the session's stream that one of its calls crossed a budget threshold."""
        c = crossing
        return self._change(
            session_id,
            lambda s: s.note_budget_threshold(
                c.scope, c.scope_id, c.period, c.threshold, c.spent_usd, c.limit_usd,
                c.spent_tokens, c.limit_tokens,
            ),
        )  # fmt: skip

    def record_artifact(
        self,
        session_id: UUID,
        kind: ArtifactKind,
        name: str,
        blob_ref: str,
        *,
        size: int,
        sha256: str,
        media_type: str,
        tool_use_id: str | None = None,
    ) -> Receipt:
        return self._change(
            session_id,
            lambda s: s.record_artifact(
                kind, name, blob_ref, size, sha256, media_type, tool_use_id
            ),
        )

    def activate_skill(
        self, session_id: UUID, skill: SkillSpec, score: float, by: SkillActivation
    ) -> Receipt:
        """A skill takes over the session (its instructions join the conversation)."""
        return self._change(session_id, lambda s: s.activate_skill(skill, score, by))

    def recall_memories(
        self, session_id: UUID, run_id: UUID, query: str, memories: list[RecalledMemory]
    ) -> Receipt:
        """Memories recalled at a run's start join the conversation."""
        return self._change(session_id, lambda s: s.recall_memories(run_id, query, memories))

    def record_sources(self, session_id: UUID, tool_use_id: str, seen: list[SourceSeen]) -> Receipt:
        """Number the pages a tool call saw (see `AgentSession.record_sources`)."""
        return self._change(session_id, lambda s: s.record_sources(tool_use_id, seen))

    def record_turn_and_calls(self, session_id: UUID, step: TurnStep) -> Receipt:
        """A model turn, the thresholds its cost crossed, the calls it requests (or the
        end of its run): one save."""
        return self._change(session_id, step.apply)

    def request_calls(self, session_id: UUID, step: CallsStep) -> Receipt:
        """Tool calls requested, and the approval the last one waits for: one save."""
        return self._change(session_id, step.apply)

    def record_result_and_effects(self, session_id: UUID, step: ResultStep) -> Receipt:
        """A tool result with its notes, sources and strike: one save."""
        return self._change(session_id, step.apply)
