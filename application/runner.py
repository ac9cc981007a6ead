"""The agent loop: build the request from the log, stream a turn, run its tools, repeat.

The request at every step is a pure function of the session's events; the model's
live deltas go out through the `DeltaSink` and are not stored, the finished turn is.
The loop ends when the model ends its turn, at the iteration limit or the token
budget, on a model error (`RunFailed`), or suspends on a pending human approval.
A stop is a cancellation of the task running this loop (see `application/runs.py`).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Callable
from contextlib import nullcontext
from datetime import UTC, datetime
from typing import Literal
from uuid import UUID

from application import log_context
from application.bridge import SyncBridge
from application.budget_guard import BudgetGuard, NoBudgets
from application.context_snapshots import SegmentCache
from application.engine_settings import COMPACTION_PROMPT, EngineSettings, frame_of
from application.mcp_tools import McpClient, refresh_toolset, with_mcp_tools
from application.memory_recall import RunMemory
from application.model_calls import ModelCalls, on_run_model
from application.ports import LLM, BlobStore, DeltaSink, LLMError, RunTracing, TokenCounter
from application.run_state import RunState
from application.sessions import SessionService
from application.skills.service import Skills
from application.snapshot_port import ContextSnapshots
from application.steps import UNRECORDED, TurnStep
from application.tool_calls import ToolCalls
from application.tools.registry import ToolRegistry
from application.warm_contexts import WarmContexts
from domain.budgets import BudgetExceeded, Spend, ThresholdCrossing
from domain.context import ContextBuilder, ContextFrame, fold_messages
from domain.conversation import (
    CacheTtl,
    Message,
    ModelRequest,
    ModelTurn,
    TextBlock,
)
from domain.policies import REBOOT_QUESTIONS, needs_compaction
from domain.pricing import PriceTable
from domain.sources import resolve_citations
from domain.stored_blocks import blocks_tool_uses, turn_blocks
from domain.values import ModelCallCost, SessionSettings

RunEnd = Literal["completed", "failed", "suspended", "not_active"]

log = logging.getLogger(__name__)


def this_worker() -> str:
    """Who runs the loop, as `RunStarted` records it: this host and process."""
    return f"{socket.gethostname()}:{os.getpid()}"


class AgentRunner:
    """Drives one run of one session through the ports."""

    def __init__(
        self,
        *,
        sessions: SessionService,
        bridge: SyncBridge,
        llm: LLM,
        tools: ToolRegistry,
        blobs: BlobStore,
        counter: TokenCounter,
        deltas: DeltaSink,
        prices: PriceTable,
        budgets: BudgetGuard | None = None,
        skills: Skills | None = None,
        settings: EngineSettings | None = None,
        worker: str | None = None,
        snapshots: ContextSnapshots | None = None,
        memory: RunMemory | None = None,
        mcp: McpClient | None = None,
        tracing: RunTracing | None = None,
    ) -> None:
        self.sessions = sessions
        self.tracing = tracing
        self.bridge = bridge
        self.llm = llm
        self.tools = tools
        self.tool_calls = ToolCalls(tools, blobs, deltas, mcp=mcp)
        self.mcp = mcp
        self.counter = counter
        self.deltas = deltas
        self.settings = settings or EngineSettings()
        self.prices = prices
        self.budgets: BudgetGuard = budgets or NoBudgets()
        self.skills = skills
        # Asked when built, not at import: a forked process has a pid of its own.
        self.worker = worker or this_worker()
        self.snapshots = snapshots
        self.memory = memory
        self.warm = WarmContexts()
        self.segments = SegmentCache()  # the snapshots' segments this process has read
        self.model_calls = ModelCalls(
            llm, deltas, default_model=self.settings.model or "",
            fallback=self.settings.model_fallback,
        )  # fmt: skip
        self.clock: Callable[[], datetime] = lambda: datetime.now(UTC)  # a skill's timeout

    async def run(self, session_id: UUID, run_id: UUID, *, recovering: bool = False) -> RunEnd:
        """Run until the run ends or waits for a human; say which."""
        span = self.tracing.invoke(session_id, run_id) if self.tracing else nullcontext()
        # The ids and the run's span on its every log line (and its model and tool spans).
        with log_context.bound(session_id=session_id, run_id=run_id), span:
            state = self.state_of(session_id, run_id)
            end = await self._run(state, session_id, run_id, recovering)
            if end != "not_active" and self.memory is not None:
                await self.memory.at_end(state)
            state.hand_over()
            log.info("run %s of session %s: %s", run_id, session_id, end)
            return end

    async def _run(
        self, state: RunState, session_id: UUID, run_id: UUID, recovering: bool
    ) -> RunEnd:
        driving_since = self.clock()  # a skill's time counts from here, or its activation
        await state.load()
        state.follow(ContextBuilder(self.frame(state.settings), self.counter.count))
        # As the log just read says (the aggregate checks again at the run's next write).
        if state.ledger.active_run != run_id:
            return "not_active"
        state.billing = state.ledger.billing
        if not state.has_started():
            await state.record(self.sessions.start_run, session_id, run_id, self.worker)
            await refresh_toolset(state, self.mcp)
            await self._match_skill(state)
            if self.memory is not None:
                await self.memory.at_start(state, self.sessions)
        if await self.tool_calls.work_through(state, recovering=recovering) == "suspended":
            return "suspended"
        while True:
            limit = self._limit_reached(state, driving_since)
            if limit is not None:
                await state.record(self.sessions.complete_run, session_id, run_id, limit)
                return "completed"
            await self._maybe_reboot(state)
            try:
                request, estimate = await self._request(state)
                covered = await self._check_budgets(state, request, estimate)
                turn, latency_ms = await self._stream(state, request)
            except (LLMError, BudgetExceeded) as e:
                await state.record(self.sessions.fail_run, session_id, run_id, str(e), e.code)
                return "failed"
            cost = self._cost(turn, request.cache_ttl)
            cited, unknown = resolve_citations(turn.content, state.ledger.sources)
            crossings = await self._before_recording(state, turn, cost, covered)
            opening = self.tool_calls.open(state, blocks_tool_uses(turn_blocks(turn)))
            # A turn that asks for no tool ends the run, in the same write.
            ends = None if turn.tool_uses else turn.stop_reason
            step = TurnStep(
                run_id, turn, latency_ms, cost, cited, unknown, crossings, opening.step, ends
            )
            receipt = await state.record(self.sessions.record_turn_and_calls, session_id, step)
            state.spent[-1] = (receipt.notification_id, state.spent[-1][1])
            if ends is not None:
                return "completed"
            if await self.tool_calls.go_on(state, opening) == "suspended":
                return "suspended"

    def state_of(self, session_id: UUID, run_id: UUID) -> RunState:
        """A run's state, reading and keeping snapshots of the folded log if configured."""
        return RunState(
            session_id, run_id, self.sessions, self.bridge, self.snapshots,
            self.settings.snapshot_every, self.warm, self.segments,
        )  # fmt: skip

    def frame(self, settings: SessionSettings) -> ContextFrame:
        """The frozen part of every request of a session."""
        catalog = self.skills.catalog() if self.skills is not None else ""
        return frame_of(self.settings, settings, self.tools.specs(), catalog)

    def _limit_reached(self, state: RunState, driving_since: datetime) -> str | None:
        """The limit this run has reached, if any. A skill's `max_iterations` and
        `timeout` bound each run, as the session's do: its time counts from its
        activation, or from when this run was taken up if that is later (a run resumed
        after an approval is not charged for the wait)."""
        limit = state.settings.max_iterations
        if limit is None:
            limit = self.settings.max_iterations
        skill = state.ledger.skill
        if skill is not None and skill.max_iterations is not None:
            limit = min(limit, skill.max_iterations)
        if state.turns >= limit:
            return "max_iterations"
        if skill is not None and skill.timeout is not None:
            since = max(skill.timestamp, driving_since)
            if (self.clock() - since).total_seconds() > skill.timeout:
                return "skill_timeout"
        budget = state.settings.token_budget
        if budget is not None and state.ledger.tokens_used >= budget:
            return "token_budget"
        return None

    async def _match_skill(self, state: RunState) -> None:
        """At a run's start, a skill for the user's message, if none is active yet."""
        if self.skills is None or state.ledger.skill is not None:
            return
        message = await state.last_user_message()
        found = await asyncio.to_thread(self.skills.match, message) if message else None
        if found is not None:
            spec, score, by = found
            await state.record(self.sessions.activate_skill, state.session_id, spec, score, by)

    async def _maybe_reboot(self, state: RunState) -> None:
        stalled = state.ledger.stalled_turns
        if stalled >= self.settings.reboot_after:
            await state.record(
                self.sessions.request_reboot, state.session_id, list(REBOOT_QUESTIONS), stalled
            )

    async def _request(self, state: RunState) -> tuple[ModelRequest, int]:
        """The next request and its input estimate, compacting the context first if due."""
        assert state.context is not None
        request, estimate = state.context.request_and_estimate()
        if not needs_compaction(estimate, self.settings.context_window):
            return self._for_run(state, request), estimate
        through = state.ledger.last_turn_version - 1
        if through <= 1:
            return request, estimate  # nothing older than the newest turn to fold away
        call, cache_ttl = await self._summarize(state, through, state.context.frame, estimate)
        measure = ContextBuilder(state.context.frame, self.counter.count)
        for e in await state.full_log():  # compaction is rare: it may read the whole log
            measure.apply(e)
        measure.compact(call.text, through)
        after = measure.request_and_estimate()[1]
        cost = self._cost(call, cache_ttl)
        receipt = await state.record(
            self.sessions.record_compaction, state.session_id, call.text, through, estimate,
            after, call, cost,
        )  # fmt: skip
        await self._after_call(state, receipt.notification_id, call, cost)
        request, estimate = state.context.request_and_estimate()
        return self._for_run(state, request), estimate

    @staticmethod
    def _for_run(state: RunState, request: ModelRequest) -> ModelRequest:
        """The request on the run's model, with the session's MCP tools."""
        request = on_run_model(state.ledger, state.settings, state.run_id, request)
        return with_mcp_tools(state, request)

    async def _summarize(
        self, state: RunState, through: int, frame: ContextFrame, estimate: int
    ) -> tuple[ModelTurn, CacheTtl]:
        """The model call that summarizes the log through `through` (its input is about
        the size of the whole context, `estimate`)."""
        log = await state.full_log()
        history = fold_messages([e for e in log if e.originator_version <= through])
        ask = Message("user", (TextBlock(COMPACTION_PROMPT),))
        request = ModelRequest(
            frame.system, (), (*history, ask), model=frame.model, cache_ttl=frame.cache_ttl
        )
        request = on_run_model(state.ledger, state.settings, state.run_id, request)
        await self._check_budgets(state, request, estimate)
        turn, _ = await self._stream(state, request, live=False)
        return turn, request.cache_ttl

    # -- what calls cost ------------------------------------------------------------

    async def _check_budgets(self, state: RunState, request: ModelRequest, estimate: int) -> bool:
        """`BudgetExceeded` if the call's worst case could take a budget over its limit;
        else whether any budget covers the run."""
        model = request.model or self.settings.model or ""
        max_tokens = request.max_tokens or self.settings.max_tokens or 0
        worst_usd = self.prices.worst_case(model, estimate, max_tokens, request.cache_ttl)
        worst = Spend(worst_usd, estimate + max_tokens)
        return await self.budgets.before_call(state.billing_scope, worst, state.spent)

    def _cost(self, turn: ModelTurn, cache_ttl: CacheTtl) -> ModelCallCost:
        cost = self.prices.cost(turn.model, turn.usage, cache_ttl)
        return ModelCallCost(cost.usd, cost.price_version, cost.priced, cache_ttl)

    async def _after_call(
        self, state: RunState, notification_id: int, call: ModelTurn, cost: ModelCallCost
    ) -> None:
        """Count the recorded call, and tell the session of each threshold it crossed."""
        state.spent.append((notification_id, Spend(cost.usd, call.usage.total)))
        crossings = await self.budgets.after_call(
            state.billing_scope, state.session_id, state.spent
        )
        for crossing in crossings:
            await state.record(self.sessions.note_budget_threshold, state.session_id, crossing)

    async def _before_recording(
        self, state: RunState, call: ModelTurn, cost: ModelCallCost, covered: bool
    ) -> list[ThresholdCrossing]:
        """Count a call about to be recorded with its turn, and the thresholds it crossed
        (noted in the same write, right after the turn); none if no budget `covered` the
        run when the call was checked."""
        state.spent.append((UNRECORDED, Spend(cost.usd, call.usage.total)))
        if not covered:
            return []
        return await self.budgets.after_call(state.billing_scope, state.session_id, state.spent)

    async def _stream(
        self, state: RunState, request: ModelRequest, *, live: bool = True
    ) -> tuple[ModelTurn, int]:
        """One model call for the run (its deltas live unless `live` is off); a fallback
        model that takes it over is recorded before it is called."""

        async def switch(was: str, now: str, error: LLMError) -> None:
            await state.record(
                self.sessions.use_fallback_model, state.session_id, state.run_id, was, now,
                str(error), error.code,
            )  # fmt: skip

        return await self.model_calls.call(state.session_id, request, live=live, on_fallback=switch)
