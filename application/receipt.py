"""What a session command gives back."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from domain.events import SessionEvent
from domain.session import AgentSession


@dataclass(frozen=True)
class Receipt:
    """What a command wrote: the events, the new version and the last notification id."""

    session_id: UUID
    version: int
    notification_id: int
    events: tuple[SessionEvent, ...] = ()

    def requested_run(self) -> UUID:
        """The run a send-message command requested."""
        for e in self.events:
            if isinstance(e, AgentSession.RunRequested):
                return e.run_id
        raise AssertionError(f"no run requested in {self}")
