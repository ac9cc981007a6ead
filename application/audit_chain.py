"""The hash chain over an aggregate's stored events, and its verification (pure).

Every stored event carries `prev_hash` and `hash`, computed by the database in the
transaction that inserts it (`adapters/postgres/recorder.py`):

    hash = SHA-256(prev_hash || topic || version || state)

- `prev_hash`: 32 bytes, the `hash` of the aggregate's event at version - 1; for
  version 1 the genesis: 32 zero bytes, or for a forked session (its `SessionStarted`
  names `parent_id` and `parent_version`) the parent's `hash` at `parent_version`;
- `topic`: the stored topic as UTF-8 bytes (e.g. `domain.session:AgentSession.SessionStarted`);
- `version`: `originator_version` as 8 bytes, big-endian, signed (Postgres `int8send`);
- `state`: the stored `state` bytes exactly (the library's JSON, whose `timestamp` is
  the event's time).

No separators: a JSON state and a topic hold no NUL byte and every version below 2**56
does, so no two (topic, version, state) concatenate alike. Anyone with the rows can
recompute the chain; this module does, for the API and the CLI alike.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol
from uuid import UUID

GENESIS = bytes(32)  # the `prev_hash` of an aggregate's first event (unless forked)


@dataclass(frozen=True)
class ChainRow:
    """One stored event as the chain sees it."""

    version: int
    topic: str
    state: bytes
    prev_hash: bytes | None
    hash: bytes | None


@dataclass(frozen=True)
class ChainVerdict:
    """What verifying an aggregate's chain found."""

    verified: bool
    events: int
    head_hash: bytes | None  # the hash of the last event (None if it has none)
    head_version: int
    first_bad_version: int | None = None
    reason: str | None = None


def link_hash(prev_hash: bytes, topic: str, version: int, state: bytes) -> bytes:
    """The hash of an event chained after `prev_hash` (see the module's docstring)."""
    return hashlib.sha256(
        prev_hash + topic.encode() + version.to_bytes(8, "big", signed=True) + state
    ).digest()


def verify_chain(rows: Sequence[ChainRow], genesis: bytes | None) -> ChainVerdict:
    """Recompute the chain over `rows` (one aggregate's, in version order) from `genesis`.

    The first bad version is the first that is missing (a gap), unhashed, cites another
    `prev_hash` than its predecessor's hash, or whose hash is not that of its bytes.
    """
    expected_prev = genesis
    head = rows[-1] if rows else None
    for expected_version, row in enumerate(rows, start=1):
        problem = _problem(row, expected_version, expected_prev)
        if problem is not None:
            bad = min(row.version, expected_version)
            return ChainVerdict(
                False, len(rows), head.hash if head else None, head.version if head else 0,
                bad, problem,
            )  # fmt: skip
        expected_prev = row.hash
    return ChainVerdict(True, len(rows), head.hash if head else None, head.version if head else 0)


def _problem(row: ChainRow, expected_version: int, expected_prev: bytes | None) -> str | None:
    if row.version != expected_version:
        return f"version {expected_version} is missing (the next stored is {row.version})"
    if row.hash is None or row.prev_hash is None:
        return f"version {row.version} has no hash (run `tokendance audit backfill`)"
    if row.prev_hash != expected_prev:
        cited = "the genesis" if row.version == 1 else f"the hash of version {row.version - 1}"
        return f"version {row.version}'s prev_hash is not {cited}"
    if link_hash(row.prev_hash, row.topic, row.version, row.state) != row.hash:
        return f"version {row.version}'s stored bytes do not hash to its hash"
    return None


class ChainStore(Protocol):
    """Where an aggregate's chained rows are read from."""

    def rows(self, originator_id: UUID) -> list[ChainRow]:
        """The aggregate's stored events in version order (none: no such aggregate)."""
        ...

    def genesis(self, first: ChainRow) -> bytes | None:
        """The `prev_hash` the event `first` (a version 1) must cite."""
        ...


def audit(store: ChainStore, originator_id: UUID) -> ChainVerdict | None:
    """The verdict on an aggregate's chain, or None if it has no events."""
    rows = store.rows(originator_id)
    if not rows:
        return None
    genesis = store.genesis(rows[0]) if rows[0].version == 1 else None
    return verify_chain(rows, genesis)
