"""Snapshots of what a run folds from a session's log: its `Ledger` and its context.

A run starts from the newest snapshot and the events after it, so its cost stays flat
as the session grows. A snapshot is a pure function of the events up to its version,
and is kept in two parts, so that keeping one costs what it adds, not the session:

- segments: what the events added to the conversation (`FoldedContext.added`) and the
  token counts of the turns that can no longer change, each segment only what came
  after the previous one; written once, never rewritten, like the log. A compaction
  starts a new epoch (the version of its `ContextCompacted`): its first segment holds
  what the compaction kept, and the older epochs' segments are dropped.
- the head: the ledger, the plan, the sources read, the skill, the newest compaction's
  summary, and which segments of the epoch make the conversation. Small, and replaced.

The merged turns are not kept (they are the added turns, merged: `ContextBuilder.turns_of`).
Events in a snapshot are encoded as the store encodes them (the session's mapper,
upcasts included), the rest with msgspec (`application/snapshot_wire.py`). One that
cannot be read (another format, a renamed class, a segment missing or not matching)
is ignored with a warning, and the run folds the whole log.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from uuid import UUID

import msgspec
from eventsourcing.persistence import Mapper

from application.snapshot_port import ContextSnapshots, KeptSnapshot, SnapshotSegment, SnapshotWrite
from application.snapshot_wire import (
    Block,
    EventState,
    LedgerState,
    decode_block,
    decode_event,
    decode_ledger,
    encode_block,
    encode_event,
    encode_ledger,
    ledger_sources,
    role,
)
from domain.context import Added, ContextBuilder, FoldedContext
from domain.ledger import Ledger
from domain.session import AgentSession as S
from domain.values import PlanItem

FORMAT = 4  # change it with the shapes below: older snapshots are then ignored

log = logging.getLogger(__name__)


class _Segment(msgspec.Struct, array_like=True):
    format: int
    added: list[tuple[int, str, list[Block]]]
    tokens: list[int]  # of the turns after the previous segment's, that can no longer change


class _Head(msgspec.Struct, array_like=True):
    format: int
    version: int
    epoch: int
    segments: list[tuple[int, int, int]]  # (through, added so far, tokens so far)
    ledger: LedgerState
    plan: list[tuple[str, str]]
    reads: list[tuple[int, str]]
    skill: EventState | None
    compaction: tuple[str, int] | None


@dataclass(frozen=True)
class Stored:
    """What the stored snapshots of a session's epoch hold: a run writes only what comes
    after it. `segments` are (through, added so far, tokens so far)."""

    epoch: int = 0
    segments: tuple[tuple[int, int, int], ...] = ()

    @property
    def added(self) -> int:
        return self.segments[-1][1] if self.segments else 0

    @property
    def tokens(self) -> int:
        return self.segments[-1][2] if self.segments else 0


@dataclass(frozen=True)
class Folded:
    """A session folded up to `version`, and what its stored snapshot holds."""

    version: int
    ledger: Ledger
    context: FoldedContext
    stored: Stored = field(default_factory=Stored)
    read: Mapping[int, Segment] = field(default_factory=dict)  # the segments read from the store


_head_decoder = msgspec.json.Decoder(_Head)
_segment_decoder = msgspec.json.Decoder(_Segment)
_encoder = msgspec.json.Encoder()


def encode(
    version: int,
    ledger: Ledger,
    context: FoldedContext,
    mapper: Mapper[UUID],
    stored: Stored = Stored(),  # noqa: B008 - frozen, shared on purpose
) -> tuple[SnapshotWrite, Stored]:
    """The snapshot at `version` that adds to `stored`, and what is stored once it is kept."""
    epoch = context.compacted_at
    if stored.epoch != epoch:
        stored = Stored(epoch)  # a compaction since: its first segment holds what it kept
    # A turn that is not the last can no longer change (until a compaction): its count
    # is final. Those of the earlier segments are, so this only grows.
    final = max(stored.tokens, min(len(context.tokens), len(context.turns) - 1))
    added, tokens = context.added[stored.added :], context.tokens[stored.tokens : final]
    segment = None
    if added or tokens:
        body = _Segment(
            FORMAT, [(v, r, [encode_block(b) for b in bs]) for v, r, bs in added], tokens
        )
        segment = SnapshotSegment(version, _encoder.encode(body))
        stored = Stored(epoch, (*stored.segments, (version, len(context.added), final)))
    head = _Head(
        FORMAT, version, epoch, list(stored.segments), encode_ledger(ledger, mapper),
        [(i.title, i.status) for i in context.plan], list(context.reads.items()),
        encode_event(context.skill, mapper) if context.skill else None, context.compaction,
    )  # fmt: skip
    return SnapshotWrite(version, epoch, _encoder.encode(head), segment), stored


def read(
    snapshots: ContextSnapshots, session_id: UUID, mapper: Mapper[UUID], cache: SegmentCache
) -> Folded | None:
    """The newest snapshot of the session, reading only the segments `cache` lacks (and
    keeping those in it), or None: none kept, or one that cannot be read."""
    held = cache.held(session_id)
    kept = snapshots.latest(session_id, have=tuple(held))
    if kept is None:
        return None
    folded = decode(kept, mapper, held)
    if folded is not None:
        for through, segment in folded.read.items():
            cache.put(session_id, through, segment)
    return folded


def decode(
    kept: KeptSnapshot, mapper: Mapper[UUID], held: Mapping[int, Segment] | None = None
) -> Folded | None:
    """The snapshot `kept` holds (with the segments `held` already decoded), or None,
    with a warning, if it cannot be read as this format: the run folds the whole log."""
    try:
        return _decode(kept, mapper, held or {})
    except (msgspec.DecodeError, ValueError, TypeError, KeyError, AttributeError) as e:
        log.warning("a context snapshot at version %d is ignored: %r", kept.version, e)
        return None


def _decode(kept: KeptSnapshot, mapper: Mapper[UUID], held: Mapping[int, Segment]) -> Folded | None:
    head = _head_decoder.decode(kept.head)
    if head.format != FORMAT:
        log.warning("a context snapshot of format %s is ignored (now %d)", head.format, FORMAT)
        return None
    added: list[Added] = []
    tokens: list[int] = []
    read: dict[int, Segment] = {}
    for through, added_so_far, tokens_so_far in head.segments:
        segment = held.get(through)
        if segment is None:
            segment = read[through] = _segment(head.epoch, kept.segments[through])
        if segment.epoch != head.epoch:
            raise ValueError(f"the segment through {through} is of another epoch")
        added += segment.added
        tokens += segment.tokens
        if (len(added), len(tokens)) != (added_so_far, tokens_so_far):
            raise ValueError(f"the segment through {through} does not follow the one before")
    skill = decode_event(head.skill, mapper) if head.skill else None
    if skill is not None and not isinstance(skill, S.SkillActivated):
        raise ValueError("a snapshot's skill is not a skill")
    turns = ContextBuilder.turns_of(added, head.compaction, skill)
    if len(tokens) > len(turns):
        raise ValueError("more token counts than turns")
    context = FoldedContext(
        added, turns, tokens, [PlanItem.of({"title": t, "status": s}) for t, s in head.plan],
        dict(ledger_sources(head.ledger)), dict(head.reads), skill, head.compaction, head.epoch,
    )  # fmt: skip
    stored = Stored(head.epoch, tuple((t, a, n) for t, a, n in head.segments))
    return Folded(head.version, decode_ledger(head.ledger, mapper), context, stored, read)


def _segment(epoch: int, data: bytes) -> Segment:
    raw = _segment_decoder.decode(data)
    if raw.format != FORMAT:
        raise ValueError(f"a segment is of format {raw.format}")
    added = [(v, role(r), [decode_block(b) for b in bs]) for v, r, bs in raw.added]
    return Segment(epoch, added, raw.tokens, len(data))


@dataclass(frozen=True)
class Segment:
    """A segment as read: what its events added, the token counts, its size stored."""

    epoch: int
    added: list[Added]  # read only: shared by every context folded from it
    tokens: list[int]
    size: int


class SegmentCache:
    """The segments this process has read, by session and `through`, the least recently
    used dropped beyond `max_bytes` (of their stored size). A segment never changes, so
    one held is always right: a run start reads only the head and the segments it lacks."""

    def __init__(self, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self._held: OrderedDict[tuple[UUID, int], Segment] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()  # run starts read snapshots on the store's threads

    def held(self, session_id: UUID) -> dict[int, Segment]:
        with self._lock:
            found = {t: s for (sid, t), s in self._held.items() if sid == session_id}
            for through in found:
                self._held.move_to_end((session_id, through))
            return found

    def put(self, session_id: UUID, through: int, segment: Segment) -> None:
        with self._lock:
            key = (session_id, through)
            if key in self._held:
                return
            self._held[key] = segment
            self._bytes += segment.size
            while self._bytes > self.max_bytes and self._held:
                _, dropped = self._held.popitem(last=False)
                self._bytes -= dropped.size


class InMemoryContextSnapshots:
    """`ContextSnapshots` in dicts: the newest head of each session, and its segments."""

    def __init__(self) -> None:
        self._heads: dict[UUID, SnapshotWrite] = {}
        self._segments: dict[UUID, dict[tuple[int, int], bytes]] = {}

    def latest(self, session_id: UUID, have: Collection[int] = ()) -> KeptSnapshot | None:
        head = self._heads.get(session_id)
        if head is None:
            return None
        kept = self._segments.get(session_id, {})
        segments = {
            through: data
            for (epoch, through), data in kept.items()
            if epoch == head.epoch and through not in have
        }
        return KeptSnapshot(head.version, head.head, segments)

    def keep(self, session_id: UUID, snapshot: SnapshotWrite) -> None:
        segments = self._segments.setdefault(session_id, {})
        if snapshot.segment is not None:
            segments.setdefault((snapshot.epoch, snapshot.segment.through), snapshot.segment.data)
        head = self._heads.get(session_id)
        if head is None or head.version < snapshot.version:
            self._heads[session_id] = snapshot
        for key in [key for key in segments if key[0] < snapshot.epoch]:
            del segments[key]

    def segment_bytes(self, session_id: UUID) -> Mapping[tuple[int, int], int]:
        """The size of each kept segment, by (epoch, through)."""
        return {key: len(data) for key, data in self._segments.get(session_id, {}).items()}
