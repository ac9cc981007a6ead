"""One run in progress: the session's log as the runner sees it, and how it writes.

Every command goes through here, and the events it recorded are folded into the
local log, the ledger and the context at once, so the next request is built from
exactly what is stored, without reading the log again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ParamSpec
from uuid import UUID

from application.bridge import SyncBridge
from application.sessions import Receipt, SessionService
from domain.budgets import BillingScope, Spend
from domain.context import ContextBuilder
from domain.events import SessionEvent
from domain.ledger import Ledger
from domain.values import SessionSettings, ToolUseContent

P = ParamSpec("P")


@dataclass
class RunState:
    """The log of one session during one run, kept in step with the store."""

    session_id: UUID
    run_id: UUID
    sessions: SessionService
    bridge: SyncBridge
    log: list[SessionEvent] = field(default_factory=list)
    ledger: Ledger = field(default_factory=Ledger)
    context: ContextBuilder | None = None
    billing: BillingScope | None = None  # whose budgets cover the run (known once it runs)
    # (notification id, spend) of each model call this run recorded
    spent: list[tuple[int, Spend]] = field(default_factory=list)

    async def load(self) -> None:
        self.log = list(await self.bridge(_events, self.sessions, self.session_id))
        self.ledger = Ledger.of(self.log)

    def follow(self, context: ContextBuilder) -> None:
        """Keep `context` up to date with the log from now on."""
        for e in self.log:
            context.apply(e)
        self.context = context

    async def record(
        self, command: Callable[P, Receipt], *args: P.args, **kwargs: P.kwargs
    ) -> Receipt:
        receipt = await self.bridge(command, *args, **kwargs)
        for e in receipt.events:
            self.log.append(e)
            self.ledger.apply(e)
            if self.context is not None:
                self.context.apply(e)
        return receipt

    @property
    def billing_scope(self) -> BillingScope:
        assert self.billing is not None, "the run's billing scope is set when it starts"
        return self.billing

    @property
    def settings(self) -> SessionSettings:
        return self.ledger.settings

    @property
    def turns(self) -> int:
        """Assistant turns of this run so far."""
        return self.ledger.turns_by_run.get(self.run_id, 0)

    def has_started(self) -> bool:
        return self.run_id in self.ledger.started_runs

    def last_turn_tool_uses(self) -> list[ToolUseContent]:
        return self.ledger.tool_uses_of_last_turn(self.run_id)


def _events(sessions: SessionService, session_id: UUID) -> Sequence[SessionEvent]:
    sessions.get_session(session_id)  # SessionNotFound for an unknown id
    return list(sessions.session_events(session_id))
