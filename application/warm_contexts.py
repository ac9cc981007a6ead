"""What a run of this process ended with, handed to the session's next run here.

A run folds its session's log into a `Ledger` and a context. When it ends in step
with the store (no one else wrote between its commands), that fold is exactly the fold
of the events up to its version, so the session's next run in this process can take it
and read only the events after it (the user's next message and its request), instead
of decoding the log from the newest stored snapshot on; the session aggregate its last
write left, caught up with those events, is what the next run writes on. `take` hands
the objects over: the run that takes them folds into them, so no two runs ever hold the
same ones. A session whose runs move between processes just reads a longer tail (events
are immutable); a process that restarts starts cold. What is kept is bounded by sessions
and by the tokens of their conversations.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from uuid import UUID

from application.context_snapshots import Stored
from domain.context import FoldedContext
from domain.events import SessionEvent
from domain.ledger import Ledger
from domain.session import AgentSession


@dataclass(frozen=True)
class Warm:
    """A session folded up to `version`, as a run of this process left it."""

    version: int
    snapshot_at: int  # the version of the newest stored snapshot the run knew of
    ledger: Ledger
    context: FoldedContext
    # The aggregate at `version` (or at the last of `after`, once the events written after
    # it were written on it), for the next writes.
    session: AgentSession | None = None
    # Events this process wrote right after `version` (`WarmContexts.written`), in order.
    after: tuple[SessionEvent, ...] = ()
    stored: Stored = field(default_factory=Stored)  # what the stored snapshots hold

    @property
    def tokens(self) -> int:
        """The conversation's size as counted: what keeping it costs, roughly."""
        return sum(self.context.tokens)


class WarmContexts:
    """The newest `Warm` of the sessions that ran here most recently: at most `capacity`
    of them and `max_tokens` of conversation in all (a longer one is not kept)."""

    def __init__(self, capacity: int = 256, max_tokens: int = 2_000_000) -> None:
        self.capacity = capacity
        self.max_tokens = max_tokens
        self.tokens = 0
        self._kept: OrderedDict[UUID, Warm] = OrderedDict()

    def take(self, session_id: UUID) -> Warm | None:
        """The session's fold, no longer kept here: the caller owns it now."""
        warm = self._kept.pop(session_id, None)
        if warm is not None:
            self.tokens -= warm.tokens
        return warm

    def lend_session(self, session_id: UUID) -> AgentSession | None:
        """The session's aggregate as its last run here left it, for the next command on
        it (`SessionService.lending`), which the caller gives back with `written`."""
        warm = self._kept.get(session_id)
        if warm is None or warm.session is None or warm.after:
            return None
        self._kept[session_id] = replace(warm, session=None)
        return warm.session

    def written(
        self,
        session_id: UUID,
        events: Sequence[SessionEvent],
        session: AgentSession | None = None,
    ) -> None:
        """Events this process just wrote to the session (a user's message and its run
        request): kept with its fold when they follow it with no gap, so the next run
        starts from them instead of reading them back; `session`, the aggregate they were
        written on, is kept for its writes. Events written after them by anyone are the
        run's to find: its first write says where the log is."""
        warm = self._kept.get(session_id)
        if warm is None or not events:
            return
        if events[0].originator_version == warm.version + len(warm.after) + 1:
            last = events[-1].originator_version
            on = session if session is not None and session.version == last else None
            self._kept[session_id] = replace(
                warm, after=(*warm.after, *events), session=on or warm.session
            )

    def keep(self, session_id: UUID, warm: Warm) -> None:
        kept = self._kept.get(session_id)
        if kept is not None and kept.version >= warm.version:
            return
        self.take(session_id)
        if warm.tokens > self.max_tokens:
            return
        self._kept[session_id] = warm
        self.tokens += warm.tokens
        while len(self._kept) > self.capacity or self.tokens > self.max_tokens:
            _, oldest = self._kept.popitem(last=False)
            self.tokens -= oldest.tokens

    def __len__(self) -> int:
        return len(self._kept)
