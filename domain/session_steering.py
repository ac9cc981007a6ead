"""How the engine steers a session (a base of `AgentSession`): the skills it activates,
the memories it recalls, the context it compacts, the strikes and reboots that stop a
run going round in circles, and the budget thresholds its calls cross."""

from __future__ import annotations

import hashlib
from decimal import Decimal
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate

from domain.conversation import CacheTtl, ModelTurn, Usage
from domain.errors import InvalidCommand
from domain.session_log import SessionLog, State
from domain.values import BudgetScope, ModelCallCost, RecalledMemory, SkillActivation, SkillSpec


class SteeringLog(SessionLog):
    """The steering events, and the commands that record them."""

    class SkillActivated(Aggregate.Event):
        """A skill took over the session's way of working: its instructions (Level 2)
        join the conversation here, and its limits apply from here on."""

        name: str
        skill_version: str
        score: float
        by: SkillActivation  # "keyword" | "embedding" (the matcher) | "tool" (the model)
        instructions: str
        instructions_sha256: str
        allowed_tools: list[str] | None
        max_iterations: int | None
        timeout: int | None  # seconds from activation
        model: str | None  # the model the skill prefers for the turns it drives

        class_version = 2

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            state.setdefault("model", None)

    class ModelFallbackUsed(Aggregate.Event):
        """A model call failed for want of capacity (overloaded, unavailable or rate
        limited, after its retries) before any of its turn was streamed, and the next
        model of the fallback list takes it over, for the rest of the run."""

        run_id: UUID
        from_model: str
        to_model: str
        reason: str  # the failure, as the vendor's error was classified and worded
        error_code: str  # LLM_OVERLOADED, LLM_RATE_LIMITED or LLM_CONNECTION_ERROR

    class McpToolsetChanged(Aggregate.Event):
        """The MCP servers' tools the session's agent is offered from here on (each
        `{server, tool, description, input_schema, risky}`), and the servers that could
        not be reached (`{server, reason}`): the log says which tools each request had."""

        run_id: UUID
        tools: list[dict[str, Any]]
        unavailable: list[dict[str, str]]

    class MemoriesRecalled(Aggregate.Event):
        """Long-term memories recalled for the user's message at a run's start: they join
        the conversation here (never the system prompt, so the cached prefix stays)."""

        run_id: UUID
        query: str
        memories: list[RecalledMemory]

    class StrikeRecorded(Aggregate.Event):
        tool: str
        error_signature: str
        count: int

    class RebootRequested(Aggregate.Event):
        questions: list[str]
        iterations_without_progress: int

    class ContextCompacted(Aggregate.Event):
        summary: str
        through_version: int
        tokens_before: int
        tokens_after: int
        # The model call that wrote the summary ("" and zeros: recorded before v2).
        model: str
        input_tokens: int
        output_tokens: int
        cache_read_tokens: int
        cache_write_tokens: int
        cache_ttl: CacheTtl
        cost_usd: Decimal
        price_version: str
        priced: bool

        class_version = 2

        @staticmethod
        def upcast_v1_v2(state: State) -> None:
            state.update(model="", input_tokens=0, output_tokens=0, cache_read_tokens=0)
            state.update(cache_write_tokens=0, cache_ttl="5m", cost_usd=Decimal(0))
            state.update(price_version="", priced=True)

    class BudgetThresholdReached(Aggregate.Event):
        """A call of this session took a budget's spend this month past a threshold."""

        scope: BudgetScope
        scope_id: UUID
        period: str  # the month, YYYY-MM (UTC)
        threshold: int  # percent of the limit
        spent_usd: Decimal
        limit_usd: Decimal | None
        spent_tokens: int
        limit_tokens: int | None

    def activate_skill(self, skill: SkillSpec, score: float, by: SkillActivation) -> None:
        self._check_open()
        self.trigger_event(
            self.SkillActivated, name=skill.name, skill_version=skill.version, score=score,
            by=by, instructions=skill.instructions,
            instructions_sha256=hashlib.sha256(skill.instructions.encode()).hexdigest(),
            allowed_tools=None if skill.allowed_tools is None else list(skill.allowed_tools),
            max_iterations=skill.max_iterations, timeout=skill.timeout, model=skill.model,
        )  # fmt: skip

    def use_fallback_model(
        self, run_id: UUID, from_model: str, to_model: str, reason: str, error_code: str
    ) -> None:
        self._check_open()
        self._check_run(run_id)
        self.trigger_event(
            self.ModelFallbackUsed, run_id=run_id, from_model=from_model, to_model=to_model,
            reason=reason, error_code=error_code,
        )  # fmt: skip

    def change_mcp_toolset(
        self, run_id: UUID, tools: list[dict[str, Any]], unavailable: list[dict[str, str]]
    ) -> None:
        self._check_open()
        self._check_run(run_id)
        self.trigger_event(
            self.McpToolsetChanged, run_id=run_id, tools=tools, unavailable=unavailable
        )

    def recall_memories(self, run_id: UUID, query: str, memories: list[RecalledMemory]) -> None:
        self._check_open()
        self.trigger_event(self.MemoriesRecalled, run_id=run_id, query=query, memories=memories)

    def record_strike(self, tool: str, error_signature: str, count: int) -> None:
        self.trigger_event(
            self.StrikeRecorded, tool=tool, error_signature=error_signature, count=count
        )

    def request_reboot(self, questions: list[str], iterations_without_progress: int) -> None:
        self.trigger_event(
            self.RebootRequested, questions=questions,
            iterations_without_progress=iterations_without_progress,
        )  # fmt: skip

    def record_compaction(
        self,
        summary: str,
        through_version: int,
        tokens_before: int,
        tokens_after: int,
        call: ModelTurn | None,
        cost: ModelCallCost,
    ) -> None:
        """Record a summary, and the model call that wrote it (`call`; None: none did)."""
        if not 1 <= through_version <= self.version:
            raise InvalidCommand(f"cannot compact through version {through_version}")
        call = call or ModelTurn((), "end_turn", Usage(), "")
        usage = call.usage
        self.trigger_event(
            self.ContextCompacted, summary=summary, through_version=through_version,
            tokens_before=tokens_before, tokens_after=tokens_after, model=call.model,
            input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens, cache_ttl=cost.cache_ttl,
            cost_usd=cost.usd, price_version=cost.price_version, priced=cost.priced,
        )  # fmt: skip

    def note_budget_threshold(
        self,
        scope: BudgetScope,
        scope_id: UUID,
        period: str,
        threshold: int,
        spent_usd: Decimal,
        limit_usd: Decimal | None,
        spent_tokens: int,
        limit_tokens: int | None,
    ) -> None:
        self.trigger_event(
            self.BudgetThresholdReached, scope=scope, scope_id=scope_id, period=period,
            threshold=threshold, spent_usd=spent_usd, limit_usd=limit_usd,
            spent_tokens=spent_tokens, limit_tokens=limit_tokens,
        )  # fmt: skip
