"""The recorded log as oracle: a model, budgets and tools that answer a replayed run
with what the stored log says came next (`application.replay` drives them)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, cast
from uuid import UUID

from application.budget_guard import Unprojected
from application.mcp_tools import McpToolSpec, Toolset, toolset_of
from application.ports import FALLBACK_ERRORS, LLM, BlobStore, LLMError, ToolExecutionError
from application.run_state import RunState
from application.steps import UNRECORDED
from application.tool_calls import ToolCalls
from application.tool_performing import Performed
from application.tools.registry import ToolRegistry
from domain.budgets import BillingScope, BudgetExceeded, Spend, ThresholdCrossing
from domain.context_turns import content_block
from domain.conversation import (
    ModelRequest,
    ModelTurn,
    StopReason,
    StreamItem,
    TextBlock,
    ToolResultBlock,
    Usage,
)
from domain.events import SessionEvent
from domain.session import AgentSession as S
from domain.values import SourceSeen

EARLIEST = datetime.min.replace(tzinfo=UTC)
LATEST = datetime.max.replace(tzinfo=UTC)


class Exhausted(Exception):
    """The log holds no answer for what the replayed run asks: the original stopped (or
    crashed) before it had one."""


class ReplayLLM:
    """Answers each model call with what the stored log says came next."""

    def __init__(self, stored: Sequence[SessionEvent], position: Callable[[], int]) -> None:
        self.stored = stored
        self.position = position
        self.exhausted = asyncio.Event()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        at = self.position()
        expected = self.stored[at] if at < len(self.stored) else None
        if isinstance(expected, S.AssistantTurnRecorded):
            yield _turn(expected)
        elif isinstance(expected, S.ContextCompacted) and not request.tools:
            usage = Usage(
                expected.input_tokens,
                expected.output_tokens,
                expected.cache_read_tokens,
                expected.cache_write_tokens,
            )
            yield ModelTurn((TextBlock(expected.summary),), "end_turn", usage, expected.model)
        elif isinstance(expected, S.RunFailed):
            error = LLMError(expected.reason)
            error.code = expected.error_code
            raise error
        elif isinstance(expected, S.ModelFallbackUsed):
            # The model could not serve this call: the same failure, so that the
            # engine hands the call to the same fallback model.
            raise _failure_of(expected)
        else:  # the original was stopped here, mid-stream: wait to be cancelled the same way
            self.exhausted.set()
            await asyncio.Event().wait()


def _failure_of(e: S.ModelFallbackUsed) -> LLMError:
    kind = next((k for k in FALLBACK_ERRORS if k.code == e.error_code), LLMError)
    return kind(e.reason, retryable=True)


def fallbacks_of(stored: Sequence[SessionEvent]) -> tuple[str, ...]:
    """The fallback models the log shows taking over, in order: the list a replay gives
    its engine, so that each failure hands its call to the model it did before."""
    taken = (e.to_model for e in stored if isinstance(e, S.ModelFallbackUsed))
    return tuple(dict.fromkeys(taken))


def model_of(stored: Sequence[SessionEvent]) -> str | None:
    """The model the engine was configured with, as far as the log says: the model the
    first fallback took over from (the log names no model the engine was asked for
    otherwise; the turns name the models that answered)."""
    return next((e.from_model for e in stored if isinstance(e, S.ModelFallbackUsed)), None)


class ReplayMcp:
    """The MCP servers in a replay: the toolsets the log recorded, never a call (an MCP
    tool's result is answered from the log like any tool with outside effects)."""

    def __init__(self, stored: Sequence[SessionEvent], position: Callable[[], int]) -> None:
        self.stored = stored
        self.position = position

    async def toolset(self, workspace_id: UUID) -> Toolset:
        at = self.position()
        if at < len(self.stored) and isinstance(self.stored[at], S.McpToolsetChanged):
            return toolset_of(self.stored[at])  # type: ignore[arg-type]
        before = (e for e in reversed(self.stored[:at]) if isinstance(e, S.McpToolsetChanged))
        return toolset_of(next(before, None))

    async def call(self, workspace_id: UUID, tool: McpToolSpec, args: dict[str, Any]) -> str:
        raise ToolExecutionError("a replay calls no MCP server")

    async def aclose(self) -> None:
        """Nothing to close: a replay connects to no server."""


class ReplayClock:
    """The runner's clock in a replay. The only decision it takes on the time is whether
    a skill's time is up, and the log says where it was: at a stored `RunCompleted` for
    `skill_timeout` the time is the latest there is; anywhere else the earliest, so no
    run ends on time the log does not show it ending on."""

    def __init__(self, stored: Sequence[SessionEvent], position: Callable[[], int]) -> None:
        self.stored = stored
        self.position = position

    def __call__(self) -> datetime:
        at = self.position()
        expected = self.stored[at] if at < len(self.stored) else None
        if isinstance(expected, S.RunCompleted) and expected.reason == "skill_timeout":
            return LATEST
        return EARLIEST


class ReplayBudgets:
    """Budgets as the stored log says they answered: a call refused for a budget is
    refused again, and each threshold noted after a call is noted again."""

    def __init__(self, llm: LLM) -> None:
        assert isinstance(llm, ReplayLLM), "replay budgets follow the replayed log"
        self.llm = llm

    async def before_call(
        self, scope: BillingScope, worst: Spend, unprojected: Unprojected
    ) -> bool:
        at = self.llm.position()
        expected = self.llm.stored[at] if at < len(self.llm.stored) else None
        if isinstance(expected, S.RunFailed) and expected.error_code == BudgetExceeded.code:
            raise BudgetExceeded(expected.reason)
        return True  # the crossings are the log's: always looked for

    async def after_call(
        self, scope: BillingScope, session_id: UUID, unprojected: Unprojected
    ) -> list[ThresholdCrossing]:
        crossings = []
        after = self.llm.stored[self.llm.position() :]
        if unprojected and unprojected[-1][0] == UNRECORDED and after:
            after = after[1:]  # the call is counted before its turn is recorded
        for e in after:
            if not isinstance(e, S.BudgetThresholdReached):
                break
            crossings.append(
                ThresholdCrossing(
                    e.scope,
                    e.scope_id,
                    e.period,
                    e.threshold,
                    e.spent_usd,
                    e.limit_usd,
                    e.spent_tokens,
                    e.limit_tokens,
                )
            )
        return crossings


def _turn(e: S.AssistantTurnRecorded) -> ModelTurn:
    blocks = tuple(content_block(b) for b in e.content)
    usage = Usage(e.input_tokens, e.output_tokens, e.cache_read_tokens, e.cache_write_tokens)
    turn_blocks = tuple(b for b in blocks if not isinstance(b, ToolResultBlock))
    return ModelTurn(turn_blocks, cast(StopReason, e.stop_reason), usage, e.model)


class ReplayToolCalls(ToolCalls):
    """Built-in tools run again; every other tool answers with its recorded result."""

    def __init__(
        self, tools: ToolRegistry, blobs: BlobStore, stored: Sequence[SessionEvent]
    ) -> None:
        super().__init__(tools, blobs)
        self.results = {e.tool_use_id: e for e in stored if isinstance(e, S.ToolResultRecorded)}
        self.artifacts: dict[str, list[S.ArtifactCreated]] = {}  # by the call that made them
        for e in stored:
            if isinstance(e, S.ArtifactCreated) and e.tool_use_id is not None:
                self.artifacts.setdefault(e.tool_use_id, []).append(e)
        self.sources: dict[str, list[SourceSeen]] = {}  # by the call that recorded them
        self.first_seen: dict[int, SourceSeen] = {}  # by number
        for e in stored:
            if isinstance(e, S.SourceRecorded):
                seen = SourceSeen(e.url, e.title, e.snippet, e.via, e.blob_ref)
                self.sources.setdefault(e.tool_use_id, []).append(seen)
                self.first_seen.setdefault(e.number, seen)

    async def _perform(
        self, state: RunState, tool_use_id: str, name: str, raw_args: dict[str, object]
    ) -> Performed:
        if self.tools_of(state).get(name).replayable:
            return await super()._perform(state, tool_use_id, name, raw_args)
        recorded = self.results.get(tool_use_id)
        if recorded is None:
            raise Exhausted(f"no recorded result for tool call {tool_use_id}")
        for made in self.artifacts.get(tool_use_id, ()):  # what the call made, as it did
            await state.record(
                state.sessions.record_artifact, state.session_id, made.kind, made.name,
                made.blob_ref, size=made.size, sha256=made.sha256, media_type=made.media_type,
                tool_use_id=tool_use_id,
            )  # fmt: skip
        # An error goes through the same path as a live failure: strikes count again.
        return Performed(
            recorded.status, recorded.summary, recorded.blob_ref, recorded.error,
            recorded.duration_ms, self._seen_by(recorded),
        )  # fmt: skip

    def _seen_by(self, recorded: S.ToolResultRecorded) -> tuple[SourceSeen, ...]:
        """The pages the call saw, in its order: those it recorded, and those the session
        knew already (which the session does not record again)."""
        own = {s.url: s for s in self.sources.get(recorded.tool_use_id, ())}
        if not recorded.sources:  # stored before results listed them
            return tuple(own.values())
        shown = (self.first_seen[n] for n in recorded.sources)
        return tuple(own.get(s.url, replace(s, via="search")) for s in shown)
