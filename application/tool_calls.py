"""The tool uses of one assistant turn: checked, approved if need be, run, recorded.

Every outcome is a `ToolResultRecorded` the model will see: an unknown tool, bad
arguments, a tool outside the session's allowed list, a failure, a timeout, a human
"no". A call that already has a result never runs again. Running one call is
`application.tool_performing`.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass
from typing import Literal
from uuid import UUID

import msgspec

from application.mcp_tools import McpClient, recorded, session_tools
from application.ports import BlobStore, DeltaSink
from application.run_state import RunState
from application.steps import CallRequest, CallsStep, ConfirmationAsk, Note, ResultStep, Strike
from application.tool_performing import Performed, perform
from application.tool_progress import PROGRESS_EVERY, announced
from application.tools.base import AnyTool
from application.tools.registry import ToolRegistry, ToolRejected
from domain.policies import STRIKE_LIMIT, error_signature
from domain.stored_blocks import ToolUseContent
from domain.values import RiskLevel

Outcome = Literal["done", "suspended"]


@dataclass(frozen=True)
class Asked:
    """A tool call recorded as requested: its tool and checked arguments, or why not."""

    tool_use_id: str
    name: str
    raw_args: dict[str, object]
    parsed: tuple[AnyTool, msgspec.Struct] | ToolRejected
    risk: RiskLevel = "safe"

    @property
    def request(self) -> CallRequest:
        return CallRequest(self.tool_use_id, self.name, self.raw_args, self.risk)


@dataclass(frozen=True)
class Opening:
    """The calls a new turn requests in the turn's own write, and how they go on."""

    asked: tuple[Asked, ...] = ()
    confirmation: ConfirmationAsk | None = None  # the first call waits for a human
    together: bool = False  # they all run at once

    @property
    def step(self) -> CallsStep:
        return CallsStep(tuple(a.request for a in self.asked), self.confirmation)


_ACTIONS = uuid.UUID("6f1c2a52-7d0e-4b4e-9c1e-2f7a3c9d8e10")


def action_id_for(session_id: UUID, tool_use_id: str) -> str:
    """The confirmation id of a tool use: derived, so a replay asks with the same id."""
    return str(uuid.uuid5(_ACTIONS, f"{session_id}:{tool_use_id}"))


class ToolCalls:
    """Works through the tool uses of the run's newest turn, in order."""

    def __init__(
        self,
        tools: ToolRegistry,
        blobs: BlobStore,
        live: DeltaSink | None = None,
        *,
        mcp: McpClient | None = None,
        mcp_timeout: float = 60.0,
    ) -> None:
        self.tools = tools
        self.mcp = mcp
        self.mcp_timeout = mcp_timeout
        self.blobs = blobs
        self.live = live  # where a running call's live word goes (None: nowhere)
        self.progress_every = PROGRESS_EVERY

    async def work_through(self, state: RunState, *, recovering: bool = False) -> Outcome:
        """Bring every tool use of the newest turn to a result, or stop at a pending approval.

        `recovering`: the process restarted; a call that was started (or approved) and has
        no result was interrupted, and is not run again.
        """
        uses = state.last_turn_tool_uses()
        if self._together(state, uses):
            await self._run_together(state, uses)
            return "done"
        for use in uses:
            tool_use_id = use["id"]
            if tool_use_id in state.ledger.results:
                continue
            if tool_use_id not in state.ledger.requested:
                if await self.request(state, use) == "suspended":
                    return "suspended"
                continue
            if await self.resume(state, tool_use_id, recovering) == "suspended":
                return "suspended"
        return "done"

    def open(self, state: RunState, uses: list[ToolUseContent]) -> Opening:
        """What a new turn's calls record with the turn itself: all of them when they run
        together, else the first, with the approval it waits for."""
        if not uses:
            return Opening()
        if self._together(state, uses):
            return Opening(tuple(self._check(state, use) for use in uses), together=True)
        asked = self._check(state, uses[0])
        return Opening((asked,), self._confirmation(state, asked))

    async def go_on(self, state: RunState, opening: Opening) -> Outcome:
        """Once the turn and its opening calls are recorded: run them, then the rest."""
        if opening.confirmation is not None:
            return "suspended"
        if opening.together:
            await self._perform_all(state, opening.asked)
            return "done"
        for asked in opening.asked:
            await self._settle(state, asked)
        return await self.work_through(state)

    async def request(self, state: RunState, use: ToolUseContent) -> Outcome:
        asked = self._check(state, use)
        confirmation = self._confirmation(state, asked)
        step = CallsStep((asked.request,), confirmation)
        await state.record(state.sessions.request_calls, state.session_id, step)
        if confirmation is not None:
            return "suspended"
        await self._settle(state, asked)
        return "done"

    def _check(self, state: RunState, use: ToolUseContent) -> Asked:
        """The call as it is requested (with its risk), and whether it may run at all."""
        tool_use_id, name, raw_args = use["id"], use["name"], _args_of(use)
        parsed: tuple[AnyTool, msgspec.Struct] | ToolRejected
        try:
            parsed = self.tools_of(state).parse(name, raw_args)
        except ToolRejected as e:
            parsed = e
        risky = not isinstance(parsed, ToolRejected) and parsed[0].risky
        if not isinstance(parsed, ToolRejected):
            try:
                self._check_allowed(state, name)
            except ToolRejected as e:
                parsed = e
        return Asked(tool_use_id, name, raw_args, parsed, "risky" if risky else "safe")

    def _confirmation(self, state: RunState, asked: Asked) -> ConfirmationAsk | None:
        if isinstance(asked.parsed, ToolRejected):
            return None
        tool, args = asked.parsed
        if not self._needs_confirmation(state, tool.risky):
            return None
        action_id = action_id_for(state.session_id, asked.tool_use_id)
        return ConfirmationAsk(
            action_id, asked.tool_use_id, asked.name, asked.raw_args, tool.describe(args)
        )

    async def _settle(self, state: RunState, asked: Asked) -> None:
        """Bring a requested call that needs no approval to its result."""
        if isinstance(asked.parsed, ToolRejected):
            await self._fail(state, asked.tool_use_id, asked.name, str(asked.parsed), 0)
        else:
            await self._execute(state, asked.tool_use_id, asked.name, asked.raw_args)

    async def resume(self, state: RunState, tool_use_id: str, recovering: bool) -> Outcome:
        """A requested call without a result: answered, still waiting, or interrupted."""
        asked = state.ledger.confirmations.get(tool_use_id)
        if asked is not None:
            answer = state.ledger.answers.get(asked.action_id)
            if answer is None:
                return "suspended"
            if not answer.approved:
                feedback = answer.feedback or "no reason given"
                await state.record(
                    state.sessions.record_tool_result,
                    state.session_id, tool_use_id, "cancelled",
                    f"the user rejected this action ({feedback})", error="rejected by the user",
                )  # fmt: skip
                return "done"
            if not recovering:
                requested = state.ledger.requested[tool_use_id]
                await self._execute(state, tool_use_id, requested.tool, requested.args)
                return "done"
        await state.record(
            state.sessions.record_tool_result,
            state.session_id, tool_use_id, "interrupted",
            "the run was interrupted (restart or stop) before this call finished; "
            "call it again if it is still needed",
            error="interrupted",
        )  # fmt: skip
        return "done"

    def _together(self, state: RunState, uses: list[ToolUseContent]) -> bool:
        """Whether a turn's calls may run at once: two or more, none asked yet, none that
        needs approval or writes to the log itself (its events would interleave)."""
        if len(uses) < 2 or state.settings.confirmation == "always":
            return False
        for use in uses:
            if use["id"] in state.ledger.requested:
                return False
            try:
                tool, _ = self.tools.parse(use["name"], _args_of(use))
            except ToolRejected:
                continue  # refused without running: no harm in company
            if tool.replayable or self._needs_confirmation(state, tool.risky):
                return False
        return True

    async def _run_together(self, state: RunState, uses: list[ToolUseContent]) -> None:
        """Ask for every call in order, run the admitted ones concurrently, then record
        their results in the turn's order (the log does not depend on which ended first)."""
        calls = tuple(self._check(state, use) for use in uses)
        step = CallsStep(tuple(c.request for c in calls))
        await state.record(state.sessions.request_calls, state.session_id, step)
        await self._perform_all(state, calls)

    async def _perform_all(self, state: RunState, calls: tuple[Asked, ...]) -> None:
        performed = await asyncio.gather(
            *(
                _refused(c.parsed)
                if isinstance(c.parsed, ToolRejected)
                else self._perform(state, c.tool_use_id, c.name, c.raw_args)
                for c in calls
            )
        )
        for call, result in zip(calls, performed, strict=True):
            await self._record(state, call.tool_use_id, call.name, result)

    async def _execute(
        self, state: RunState, tool_use_id: str, name: str, raw_args: dict[str, object]
    ) -> None:
        await self._record(
            state, tool_use_id, name, await self._perform(state, tool_use_id, name, raw_args)
        )

    async def _perform(
        self, state: RunState, tool_use_id: str, name: str, raw_args: dict[str, object]
    ) -> Performed:
        """Run the call with its timeout; every failure becomes an error result. Watchers
        see it run (live only)."""
        async with announced(self.live, state.session_id, tool_use_id, name, self.progress_every):
            tools = self.tools_of(state)
            return await perform(tools, self.blobs, state, tool_use_id, name, raw_args)

    async def _record(
        self, state: RunState, tool_use_id: str, name: str, result: Performed
    ) -> None:
        if result.status == "error":
            error = result.error or result.summary
            await self._fail(state, tool_use_id, name, error, result.duration_ms, result.notes)
            return
        step = ResultStep(
            tool_use_id, result.status, result.summary, result.blob_ref, result.error,
            result.duration_ms, result.notes, result.sources,
        )  # fmt: skip
        await state.record(state.sessions.record_result_and_effects, state.session_id, step)

    async def _fail(
        self,
        state: RunState,
        tool_use_id: str,
        tool: str,
        error: str,
        duration_ms: int,
        notes: tuple[Note, ...] = (),
    ) -> None:
        """An error result, and the strike it completes (counted as if it were recorded)."""
        failures = state.ledger.failures_of(tool, error) + 1
        strike = (
            Strike(tool, error_signature(error), failures) if failures >= STRIKE_LIMIT else None
        )
        step = ResultStep(
            tool_use_id, "error", error, error=error, duration_ms=duration_ms, notes=notes,
            strike=strike,
        )  # fmt: skip
        await state.record(state.sessions.record_result_and_effects, state.session_id, step)

    def tools_of(self, state: RunState) -> ToolRegistry:
        """The built-in tools and the MCP tools the session recorded."""
        return session_tools(self.tools, recorded(state.ledger), self.mcp, self.mcp_timeout)

    @staticmethod
    def _check_allowed(state: RunState, name: str) -> None:
        allowed = state.settings.allowed_tools
        if allowed is not None and name not in allowed:
            raise ToolRejected(
                f"{name} is not allowed in this session; allowed: {', '.join(allowed)}"
            )
        skill = state.ledger.skill
        tools = skill.allowed_tools if skill is not None else None
        if skill is not None and tools is not None and name not in (*tools, *SKILL_OWN_TOOLS):
            raise ToolRejected(
                f"{name} is not allowed while the skill {skill.name} is active; "
                f"allowed: {', '.join(tools)}"
            )

    @staticmethod
    def _needs_confirmation(state: RunState, risky: bool) -> bool:
        policy = state.settings.confirmation
        return policy == "always" or (policy == "risky" and risky)


# A skill's own Level 3 (its files, its scripts; taking up another skill) is open to it
# whatever its `allowed_tools` say: seed 004's skills list only their working tools.
SKILL_OWN_TOOLS = ("activate_skill", "read_skill_file", "run_skill_script")


def _args_of(use: ToolUseContent) -> dict[str, object]:
    return use["input"] if isinstance(use["input"], dict) else {}


async def _refused(rejected: ToolRejected) -> Performed:
    return Performed("error", str(rejected), None, str(rejected), 0)
