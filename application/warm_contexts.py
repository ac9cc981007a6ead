"""What a run of this process ended with, handed to the session's next run here.

A run folds its session's log into a `Ledger` and a context. When it ends in step
with the store (no one else wrote between its commands), that fold is exactly the fold
of the events up to its version, so the session's next run in this process can take it
and read only the events after it (the user's next message and its request), instead
of decoding the log from the newest stored snapshot on. `take` hands the objects over:
the run that takes them folds into them, so no two runs ever hold the same ones. A
session whose runs move between processes just reads a longer tail (events are
immutable); a process that restarts starts cold.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from uuid import UUID

from domain.context import FoldedContext
from domain.ledger import Ledger


@dataclass(frozen=True)
class Warm:
    """A session folded up to `version`, as a run of this process left it."""

    version: int
    snapshot_at: int  # the version of the newest stored snapshot the run knew of
    ledger: Ledger
    context: FoldedContext


class WarmContexts:
    """The newest `Warm` of the sessions that ran here most recently (at most `capacity`)."""

    def __init__(self, capacity: int = 256) -> None:
        self.capacity = capacity
        self._kept: OrderedDict[UUID, Warm] = OrderedDict()

    def take(self, session_id: UUID) -> Warm | None:
        """The session's fold, no longer kept here: the caller owns it now."""
        return self._kept.pop(session_id, None)

    def keep(self, session_id: UUID, warm: Warm) -> None:
        kept = self._kept.get(session_id)
        if kept is not None and kept.version >= warm.version:
            return
        self._kept[session_id] = warm
        self._kept.move_to_end(session_id)
        while len(self._kept) > self.capacity:
            self._kept.popitem(last=False)

    def __len__(self) -> int:
        return len(self._kept)
