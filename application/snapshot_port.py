"""The port where runs keep snapshots of their folded context, and the values it takes
and gives (`application/context_snapshots.py` makes and reads them)."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Protocol
from uuid import UUID


@dataclass(frozen=True)
class SnapshotSegment:
    """Part of a session's folded conversation, written once and never rewritten: what
    its events added after the previous segment of its epoch, through `through`."""

    through: int
    data: bytes


@dataclass(frozen=True)
class SnapshotWrite:
    """A snapshot to keep: a small head (the ledger, the plan, which segments make the
    conversation) and the segment it adds, if any. `epoch` is the version of the
    newest compaction (0: none): segments of older epochs are no longer read."""

    version: int
    epoch: int
    head: bytes
    segment: SnapshotSegment | None


@dataclass(frozen=True)
class KeptSnapshot:
    """The newest head of a session, and the segments of its epoch by `through`."""

    version: int
    head: bytes
    segments: Mapping[int, bytes]


class ContextSnapshots(Protocol):
    """Where a session's folded context is kept now and then, so a run starts from the
    newest snapshot and the events after it (`application/context_snapshots.py`)."""

    def latest(self, session_id: UUID, have: Collection[int] = ()) -> KeptSnapshot | None:
        """The newest snapshot of the session, without the segments whose `through` the
        caller already has."""
        ...

    def keep(self, session_id: UUID, snapshot: SnapshotWrite) -> None:
        """Keep the segment, then the head if it is newer than the kept one; drop the
        segments of epochs before its own."""
        ...
