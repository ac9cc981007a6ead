"""What a session command gives back."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from domain.events import SessionEvent


@dataclass(frozen=True)
class Receipt:
    """What a command wrote: the events, the new version and the last notification id."""

    session_id: UUID
    version: int
    notification_id: int
    events: tuple[SessionEvent, ...] = ()
