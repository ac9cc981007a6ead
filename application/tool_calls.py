"""The tool uses of one assistant turn: checked, approved if need be, run, recorded.

Every outcome is a `ToolResultRecorded` the model will see: an unknown tool, bad
arguments, a tool outside the session's allowed list, a failure, a timeout, a human
"no". A call that already has a result never runs again.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Literal
from uuid import UUID

from application.ports import BlobStore, ToolExecutionError
from application.run_state import RunState
from application.tools.base import ToolContext
from application.tools.registry import ToolRegistry, ToolRejected
from domain.errors import DomainError
from domain.policies import (
    STRIKE_LIMIT,
    SUMMARY_LIMIT,
    error_signature,
    summarize_output,
)
from domain.values import Citation, PlanItem, ToolUseContent

Outcome = Literal["done", "suspended"]
_ACTIONS = uuid.UUID("6f1c2a52-7d0e-4b4e-9c1e-2f7a3c9d8e10")


def action_id_for(session_id: UUID, tool_use_id: str) -> str:
    """The confirmation id of a tool use: derived, so a replay asks with the same id."""
    return str(uuid.uuid5(_ACTIONS, f"{session_id}:{tool_use_id}"))


class SessionNotesOfRun:
    """`SessionNotes` bound to a run: what built-in tools write lands in the log."""

    def __init__(self, state: RunState) -> None:
        self._state = state

    async def update_plan(self, items: list[PlanItem]) -> None:
        s = self._state
        await s.record(s.sessions.update_plan, s.session_id, items)

    async def record_finding(self, text: str, citations: list[Citation]) -> None:
        s = self._state
        await s.record(s.sessions.record_finding, s.session_id, text, citations)

    async def note_progress(self, text: str) -> None:
        s = self._state
        await s.record(s.sessions.note_progress, s.session_id, text)


class ToolCalls:
    """Works through the tool uses of the run's newest turn, in order."""

    def __init__(self, tools: ToolRegistry, blobs: BlobStore) -> None:
        self.tools = tools
        self.blobs = blobs

    async def work_through(self, state: RunState, *, recovering: bool = False) -> Outcome:
        """Bring every tool use of the newest turn to a result, or stop at a pending approval.

        `recovering`: the process restarted; a call that was started (or approved) and has
        no result was interrupted, and is not run again.
        """
        for use in state.last_turn_tool_uses():
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

    async def request(self, state: RunState, use: ToolUseContent) -> Outcome:
        tool_use_id, name = use["id"], use["name"]
        raw_args = use["input"] if isinstance(use["input"], dict) else {}
        try:
            tool, _ = self.tools.parse(name, raw_args)
            risky = tool.risky
        except ToolRejected:
            risky = False
        await state.record(
            state.sessions.request_tool_call,
            state.session_id, tool_use_id, name, raw_args, "risky" if risky else "safe",
        )  # fmt: skip
        try:
            tool, args = self.tools.parse(name, raw_args)
            self._check_allowed(state, name)
        except ToolRejected as e:
            await self._fail(state, tool_use_id, name, str(e), 0)
            return "done"
        if self._needs_confirmation(state, risky):
            await state.record(
                state.sessions.request_confirmation,
                state.session_id, action_id_for(state.session_id, tool_use_id), tool_use_id,
                name, raw_args, tool.describe(args),
            )  # fmt: skip
            return "suspended"
        await self._execute(state, tool_use_id, name, raw_args)
        return "done"

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

    async def _execute(
        self, state: RunState, tool_use_id: str, name: str, raw_args: dict[str, object]
    ) -> None:
        tool, args = self.tools.parse(name, raw_args)
        context = ToolContext(state.session_id, tool_use_id, SessionNotesOfRun(state))
        started = time.perf_counter()
        try:
            output = await asyncio.wait_for(tool.run(args, context), timeout=tool.timeout)
        except (ToolExecutionError, DomainError) as e:
            await self._fail(state, tool_use_id, name, str(e), _ms_since(started))
            return
        except TimeoutError:
            await self._fail(
                state, tool_use_id, name, f"timed out after {tool.timeout:g}s", _ms_since(started)
            )
            return
        except Exception as e:
            await self._fail(
                state, tool_use_id, name, f"{type(e).__name__}: {e}", _ms_since(started)
            )
            return
        blob_ref = await self.blobs.put(output.encode()) if len(output) > SUMMARY_LIMIT else None
        await state.record(
            state.sessions.record_tool_result,
            state.session_id, tool_use_id, "success", summarize_output(output, blob_ref),
            blob_ref=blob_ref, duration_ms=_ms_since(started),
        )  # fmt: skip

    async def _fail(
        self, state: RunState, tool_use_id: str, tool: str, error: str, duration_ms: int
    ) -> None:
        await state.record(
            state.sessions.record_tool_result,
            state.session_id, tool_use_id, "error", error, error=error, duration_ms=duration_ms,
        )  # fmt: skip
        failures = state.ledger.failures_of(tool, error)
        if failures >= STRIKE_LIMIT:
            await state.record(
                state.sessions.record_strike,
                state.session_id, tool, error_signature(error), failures,
            )  # fmt: skip

    @staticmethod
    def _check_allowed(state: RunState, name: str) -> None:
        allowed = state.settings.allowed_tools
        if allowed is not None and name not in allowed:
            raise ToolRejected(
                f"{name} is not allowed in this session; allowed: {', '.join(allowed)}"
            )

    @staticmethod
    def _needs_confirmation(state: RunState, risky: bool) -> bool:
        policy = state.settings.confirmation
        return policy == "always" or (policy == "risky" and risky)


def _ms_since(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)
