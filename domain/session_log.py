"""What every part of the `AgentSession` aggregate shares: its state and its rules.

The session's events are declared on bases of `AgentSession` (one per part of a
session's life: runs, tool calls, working memory, the engine's steering, decks), each
a `SessionLog`. The aggregate's metaclass redefines every base's event classes on
`AgentSession` itself, so what is stored keeps the topics
`domain.session:AgentSession.<Name>`, which never change. A part records an event by
the session's own class of it, `self.trigger_event(self.<Name>, ...)` (through the
instance, so the subclass), never through an `@event` method, which would record the
base's class; the event's `apply` changes the state.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate

from domain.errors import InvalidCommand, SessionClosed
from domain.values import RunArtifact, SessionStatus

State = dict[str, Any]  # a stored event's or snapshot's decoded state, for upcasting


class SessionLog(Aggregate):
    """The session's state the parts share (set at its start), and its rules."""

    status: SessionStatus
    archived: bool
    active_run: UUID | None
    run_worker: str | None  # who holds the active run: its latest RunStarted
    run_requested_by: UUID | None  # whose message started the active run (None: unknown)
    run_tokens: int  # tokens the active run's turns used so far
    run_message_id: int | None  # the active run's last assistant turn
    run_artifacts: list[RunArtifact]  # what the active run made
    open_tool_calls: dict[str, str]  # tool use id -> tool
    # action id -> tool use id, for confirmations asked and not yet answered
    pending_confirmations: dict[str, str]
    # action id -> approved (a dict, not a set: snapshots are stored as JSON)
    answered_confirmations: dict[str, bool]
    source_numbers: dict[str, int]  # url -> its number, from 1

    def _check_open(self) -> None:
        if self.archived:
            raise SessionClosed(self.id)

    def _check_run(self, run_id: UUID) -> None:
        if self.active_run != run_id:
            raise InvalidCommand(f"run {run_id} is not the session's active run")
