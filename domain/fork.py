"""Forking a session: a new session holding a parent's log up to a version."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields

from domain.errors import InvalidCommand
from domain.events import SessionEvent
from domain.session import AgentSession

# Set by the store on every event; a copied event gets its own.
_ENVELOPE = frozenset({"originator_id", "originator_version", "timestamp", "originator_topic"})
_RUN_ENDS = (AgentSession.RunCompleted, AgentSession.RunFailed, AgentSession.RunStopped)


def fork(parent: AgentSession, history: Sequence[SessionEvent], at_version: int) -> AgentSession:
    """A new session holding `parent`'s log up to `at_version`, at the same versions.

    A run still open at that point is stopped and its unanswered tool calls get an
    `interrupted` result, so the fork starts idle and can run again at once.
    """
    if not 1 <= at_version <= parent.version:
        raise InvalidCommand(f"cannot fork at version {at_version} (1..{parent.version})")
    child = AgentSession(
        parent.workspace_id,
        parent.owner_id,
        parent.title,
        parent.task_type,
        parent.model,
        parent.settings,
        parent.id,
        at_version,
        parent.organization_id,
        parent.team_id,
    )
    for old in history:
        if 1 < old.originator_version <= at_version:
            payload = {f.name: getattr(old, f.name) for f in fields(old) if f.name not in _ENVELOPE}
            if isinstance(old, _RUN_ENDS):  # the copies of the run's artifacts are the fork's
                payload["artifacts"] = list(child.run_artifacts)
            child.trigger_event(type(old), **payload)
    if child.active_run is not None:
        child.stop(f"forked at version {at_version}")
    return child
