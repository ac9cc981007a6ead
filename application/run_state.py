"""One run in progress: the session's log as the runner sees it, and how it writes.

Every command goes through here, and the events it recorded are appended to the local
log at once, so the next request is built from exactly what is stored.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ParamSpec
from uuid import UUID

from eventsourcing.domain import AggregateEvent

from application.bridge import SyncBridge
from application.sessions import Receipt, SessionService

P = ParamSpec("P")


@dataclass
class RunState:
    """The log of one session during one run, kept in step with the store."""

    session_id: UUID
    run_id: UUID
    sessions: SessionService
    bridge: SyncBridge
    log: list[AggregateEvent] = field(default_factory=list)

    async def load(self) -> None:
        self.log = list(await self.bridge(_events, self.sessions, self.session_id))  # type: ignore[arg-type]

    async def record(
        self, command: Callable[P, Receipt], *args: P.args, **kwargs: P.kwargs
    ) -> Receipt:
        receipt = await self.bridge(command, *args, **kwargs)
        self.log.extend(receipt.events)
        return receipt

    @property
    def settings(self) -> dict[str, object]:
        return dict(self.log[0].settings or {}) if self.log else {}  # type: ignore[attr-defined]

    def of_run(self, kind: str) -> list[AggregateEvent]:
        return [
            e
            for e in self.log
            if type(e).__name__ == kind and getattr(e, "run_id", None) == self.run_id
        ]

    def has_started(self) -> bool:
        return bool(self.of_run("RunStarted"))

    def last_turn_tool_uses(self) -> list[dict[str, object]]:
        turns = self.of_run("AssistantTurnRecorded")
        if not turns:
            return []
        return [b for b in turns[-1].content if b["type"] == "tool_use"]  # type: ignore[attr-defined]

    def tokens_used(self) -> int:
        return sum(
            e.input_tokens + e.output_tokens + e.cache_read_tokens + e.cache_write_tokens  # type: ignore[attr-defined]
            for e in self.log
            if type(e).__name__ == "AssistantTurnRecorded"
        )

    def find(self, kind: str, **match: object) -> list[AggregateEvent]:
        return [
            e
            for e in self.log
            if type(e).__name__ == kind and all(getattr(e, k, None) == v for k, v in match.items())
        ]


def _events(sessions: SessionService, session_id: UUID) -> Sequence[AggregateEvent]:
    sessions.get_session(session_id)  # SessionNotFound for an unknown id
    return list(sessions.session_events(session_id))  # type: ignore[arg-type]
