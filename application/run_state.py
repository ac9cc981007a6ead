"""One run in progress: the session's log as the runner sees it, and how it writes.

Every command goes through here, and the events it recorded are folded into the
local log, the ledger and the context at once, so the next request is built from
exactly what is stored, without reading the log again (unless another writer's events
came before the recorded ones: those are read and folded first). A run starts from the
fold the session's last run in this process ended with (`application/warm_contexts`),
with the events written since (those this process wrote, or else read), or else from
the newest stored snapshot of the folded state (`application/context_snapshots`) and
the events after it; it keeps one every `snapshot_every` events and at each compaction.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ParamSpec
from uuid import UUID

from application import context_snapshots
from application.bridge import SyncBridge
from application.context_snapshots import SegmentCache, Stored
from application.receipt import Receipt
from application.sessions import SessionService
from application.snapshot_port import ContextSnapshots
from application.warm_contexts import Warm, WarmContexts
from domain.budgets import BillingScope, Spend
from domain.context import ContextBuilder, FoldedContext
from domain.errors import SessionNotFound
from domain.events import SessionEvent
from domain.ledger import Ledger
from domain.session import AgentSession as S
from domain.stored_blocks import ToolUseContent
from domain.values import SessionSettings

P = ParamSpec("P")


@dataclass
class RunState:
    """The log of one session during one run, kept in step with the store."""

    session_id: UUID
    run_id: UUID
    sessions: SessionService
    bridge: SyncBridge
    snapshots: ContextSnapshots | None = None
    snapshot_every: int = 100
    warm: WarmContexts | None = None  # folds handed from one run of a session to the next
    segments: SegmentCache = field(default_factory=SegmentCache)  # the process's, when given
    # The events read (all of them, or those after a snapshot) and those recorded since.
    log: list[SessionEvent] = field(default_factory=list)
    version: int = 0  # of the session, as far as this run has folded it
    ledger: Ledger = field(default_factory=Ledger)
    context: ContextBuilder | None = None
    billing: BillingScope | None = None  # whose budgets cover the run (known once it runs)
    # (notification id, spend) of each model call this run recorded
    spent: list[tuple[int, Spend]] = field(default_factory=list)
    _folded: FoldedContext | None = None  # the snapshot's context, until `follow`
    _log_from: int = 0  # `log` holds the events after this version
    _snapshot_at: int = 0
    _stored: Stored = field(default_factory=Stored)  # what the stored snapshots hold
    # No one else wrote between our commands. Else their events are read and folded in
    # order all the same, but the run keeps no snapshot and hands over no fold (rare).
    _in_step: bool = True

    async def load(self) -> None:
        warm = self.warm.take(self.session_id) if self.warm is not None else None
        if warm is not None:
            tail = list(warm.after)  # what this process wrote since, if it knows
            if not tail:
                tail = await self.bridge(_tail, self.sessions, self.session_id, warm.version)
            self._start(tail, warm.ledger, warm.context, warm.version, warm.snapshot_at)
            self._stored = warm.stored
            if warm.session is not None:
                self._lend(warm.session, tail)
            return
        loaded = await self.bridge(
            _load, self.sessions, self.session_id, self.snapshots, self.segments
        )
        if loaded.folded is None:
            self._start(loaded.tail, Ledger(), None, 0, 0)
        else:
            f = loaded.folded
            self._start(loaded.tail, f.ledger, f.context, f.version, f.version)
            self._stored = f.stored

    def _start(
        self,
        tail: list[SessionEvent],
        ledger: Ledger,
        folded: FoldedContext | None,
        version: int,
        snapshot_at: int,
    ) -> None:
        """Begin from the fold up to `version` (none: version 0) and the events after it."""
        self.log, self.ledger, self._folded = tail, ledger, folded
        self._log_from, self._snapshot_at = version, snapshot_at
        for e in tail:
            ledger.apply(e)
        self.version = tail[-1].originator_version if tail else version

    def _lend(self, session: S, tail: list[SessionEvent]) -> None:
        """Have the run's writes start from `session`, brought up to the tail just read
        (it may hold some of it already: the message written on it)."""
        try:
            for e in tail:
                if e.originator_version > session.version:
                    e.mutate(session)  # checks that each event is the next version
        except Exception:
            return  # not the fold's version after all: the first write reads the log
        self.sessions.lend(session)

    def follow(self, context: ContextBuilder) -> None:
        """Keep `context` up to date with the log from now on."""
        if self._folded is not None:
            context.restore(self._folded)
            self._folded = None
        for e in self.log:
            context.apply(e)
        self.context = context

    async def full_log(self) -> list[SessionEvent]:
        """The whole log (read now if the run started from a snapshot)."""
        if self._log_from:
            head = await self.bridge(_head, self.sessions, self.session_id, self._log_from)
            self.log, self._log_from = head + self.log, 0
        return self.log

    async def last_user_message(self) -> str:
        message = await self.last_user_event()
        return message.text if message is not None else ""

    async def last_user_event(self) -> S.UserMessageAppended | None:
        found = _last_user_event(self.log)
        if found is None and self._log_from:  # said before the fold the run started from
            found = _last_user_event(await self.full_log())
        return found

    async def this_run(self) -> list[SessionEvent]:
        """The events this run recorded (the whole log is read if the run started from a
        fold taken after its start: a run resumed after an approval)."""
        mine = _from_start_of(self.run_id, self.log)
        if mine is None and self._log_from:
            mine = _from_start_of(self.run_id, await self.full_log())
        return mine or []

    def hand_over(self) -> None:
        """Leave the fold to the session's next run in this process, if it is exact: this
        state is not used again."""
        session = self.sessions.take_back(self.session_id)
        if self.warm is None or self.context is None or not self._in_step:
            return
        if session is not None and session.version != self.version:
            session = None
        folded = self.context.folded()
        warm = Warm(
            self.version, self._snapshot_at, self.ledger, folded, session, stored=self._stored
        )
        self.warm.keep(self.session_id, warm)
        self.context = None

    async def record(
        self, command: Callable[P, Receipt], *args: P.args, **kwargs: P.kwargs
    ) -> Receipt:
        # From the loop when it can (the session the last write left, no key to load);
        # otherwise on the bridge's thread: `LoopWrites`.
        receipt = await self.sessions.change_on_loop(self.bridge, command, *args, **kwargs)
        start = receipt.version - len(receipt.events)
        if start > self.version:  # another writer's events came first: fold them first
            self._fold(
                await self.bridge(_tail, self.sessions, self.session_id, self.version, start)
            )
            self._in_step = False
        self._fold(receipt.events)
        if self._snapshot_due(receipt.events):
            await self._keep_snapshot()
        return receipt

    def _fold(self, events: Sequence[SessionEvent]) -> None:
        for e in events:
            self.log.append(e)
            self.ledger.apply(e)
            if self.context is not None:
                self.context.apply(e)
            self.version = e.originator_version

    def _snapshot_due(self, events: Sequence[SessionEvent]) -> bool:
        if self.snapshots is None or self.context is None or not self._in_step:
            return False
        every = max(self.snapshot_every, 1)
        compacted = any(isinstance(e, S.ContextCompacted) for e in events)
        return compacted or self.version // every > self._snapshot_at // every

    async def _keep_snapshot(self) -> None:
        assert self.snapshots is not None and self.context is not None
        mapper = self.sessions.mapper
        folded = self.context.folded()
        write, stored = context_snapshots.encode(
            self.version, self.ledger, folded, mapper, self._stored
        )
        await self.bridge(self.snapshots.keep, self.session_id, write)
        self._snapshot_at, self._stored = self.version, stored

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


@dataclass(frozen=True)
class _Loaded:
    folded: context_snapshots.Folded | None
    tail: list[SessionEvent]  # the events after the snapshot (all of them without one)


def _load(
    sessions: SessionService,
    session_id: UUID,
    snapshots: ContextSnapshots | None,
    segments: SegmentCache,
) -> _Loaded:
    folded = None
    if snapshots is not None:
        folded = context_snapshots.read(snapshots, session_id, sessions.mapper, segments)
    after = folded.version if folded is not None else 0
    tail = _tail(sessions, session_id, after)
    if folded is None and not tail:
        raise SessionNotFound(session_id)  # a session has at least the event that started it
    return _Loaded(folded, tail)


def _tail(
    sessions: SessionService, session_id: UUID, after: int, through: int | None = None
) -> list[SessionEvent]:
    """The events after version `after` (up to and with `through`, if given)."""
    limit = None if through is None else through - after
    return list(sessions.session_events(session_id, after=after, limit=limit))


def _head(sessions: SessionService, session_id: UUID, through: int) -> list[SessionEvent]:
    return list(sessions.session_events(session_id, limit=through))


def _last_user_event(log: list[SessionEvent]) -> S.UserMessageAppended | None:
    return next((e for e in reversed(log) if isinstance(e, S.UserMessageAppended)), None)


def _from_start_of(run_id: UUID, log: list[SessionEvent]) -> list[SessionEvent] | None:
    for i, e in enumerate(log):
        if isinstance(e, S.RunStarted) and e.run_id == run_id:
            return log[i:]
    return None
