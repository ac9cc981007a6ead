"""Who changed something outside a session's own log: a user, or the agent of a session."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID


@dataclass(frozen=True)
class ByUser:
    """A user did it (through the API)."""

    user_id: UUID


@dataclass(frozen=True)
class ByAgent:
    """The agent of a session did it (with a tool)."""

    session_id: UUID


Author = ByUser | ByAgent


def author_of(user_id: UUID | None, session_id: UUID | None) -> Author:
    """Who did what an event records (a user, else the agent of a session)."""
    if user_id is not None:
        return ByUser(user_id)
    if session_id is not None:
        return ByAgent(session_id)
    raise ValueError("an event says who did it: a user or the agent of a session")
