"""A person running a tool in a session by hand, under the session's approval policy.

The call and its result are recorded like the agent's own (the model sees them, as a
note of what the user did); a call that needs approval waits for it like the agent's.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from uuid import UUID

from application.bridge import SyncBridge
from application.run_state import RunState
from application.sessions import SessionService
from application.tool_calls import ToolCalls, action_id_for
from domain.stored_blocks import ToolUseContent
from domain.values import MANUAL_PREFIX

NO_RUN = UUID(int=0)


@dataclass(frozen=True)
class ManualOutcome:
    tool_use_id: str
    status: str  # success, error, cancelled, confirm_required
    result: str | None = None
    error: str | None = None
    action_id: str | None = None
    tool: str = ""  # the tool called


class ManualTools:
    """Runs tools for people, recording them in the session."""

    def __init__(self, tool_calls: ToolCalls, sessions: SessionService, bridge: SyncBridge) -> None:
        self.tool_calls = tool_calls
        self.sessions = sessions
        self.bridge = bridge

    async def execute(
        self, session_id: UUID, name: str, args: dict[str, object], *, tool_use_id: str = ""
    ) -> ManualOutcome:
        """Run the call (`tool_use_id` given: the recorded one, as a replay does)."""
        state = await self._state(session_id)
        tool_use_id = tool_use_id or f"{MANUAL_PREFIX}{uuid.uuid4().hex}"
        use: ToolUseContent = {"type": "tool_use", "id": tool_use_id, "name": name, "input": args}
        if await self.tool_calls.request(state, use) == "suspended":
            action_id = action_id_for(session_id, tool_use_id)
            return ManualOutcome(tool_use_id, "confirm_required", action_id=action_id, tool=name)
        return _outcome(state, tool_use_id)

    async def resume(self, session_id: UUID, tool_use_id: str) -> ManualOutcome:
        """After its approval was answered: run it, or record the refusal."""
        state = await self._state(session_id)
        await self.tool_calls.resume(state, tool_use_id, recovering=False)
        return _outcome(state, tool_use_id)

    async def _state(self, session_id: UUID) -> RunState:
        state = RunState(session_id, NO_RUN, self.sessions, self.bridge)
        await state.load()
        return state


def _outcome(state: RunState, tool_use_id: str) -> ManualOutcome:
    result = state.ledger.results[tool_use_id]
    ok = result.status == "success"
    return ManualOutcome(
        tool_use_id,
        result.status,
        result=result.summary if ok else None,
        error=None if ok else result.error,
        tool=state.ledger.tools_by_use.get(tool_use_id, ""),
    )
