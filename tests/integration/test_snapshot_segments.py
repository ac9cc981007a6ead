"""Context snapshots cost what they add (Postgres): in a 2,000-event session the bytes
written to the snapshot tables grow linearly with the events, a cold start from them
builds exactly the request the full fold builds, and a compaction drops the segments
it superseded."""

from __future__ import annotations

from collections.abc import Collection
from uuid import UUID

from eventsourcing.postgres import PostgresDatastore, PostgresFactory

from adapters.postgres.context_snapshots import SEGMENTS, PostgresContextSnapshots
from adapters.system import System
from application.run_state import RunState
from application.snapshot_port import KeptSnapshot, SnapshotWrite
from domain.context import ContextBuilder
from tests.fakes.long_session import start
from tests.unit.test_context_snapshots import FRAME, full_fold, run_steps

EVERY = 100


class Measured:
    """The Postgres store, counting the bytes each snapshot writes (head and segment)."""

    def __init__(self, inner: PostgresContextSnapshots) -> None:
        self.inner = inner
        self.written: list[tuple[int, int]] = []  # (version, bytes)

    def latest(self, session_id: UUID, have: Collection[int] = ()) -> KeptSnapshot | None:
        return self.inner.latest(session_id, have)

    def keep(self, session_id: UUID, snapshot: SnapshotWrite) -> None:
        segment = len(snapshot.segment.data) if snapshot.segment else 0
        self.written.append((snapshot.version, len(snapshot.head) + segment))
        self.inner.keep(session_id, snapshot)

    def bytes_through(self, version: int) -> int:
        return sum(size for at, size in self.written if at <= version)


def datastore(system: System) -> PostgresDatastore:
    factory = system.container.sessions.factory
    assert isinstance(factory, PostgresFactory)
    return factory.datastore


def epochs(system: System, sid: UUID) -> set[int]:
    with datastore(system).get_connection() as conn:
        rows = conn.execute(f"SELECT DISTINCT epoch FROM {SEGMENTS} WHERE session_id = %s", (sid,))
        return {int(row["epoch"]) for row in rows.fetchall()}


async def test_bytes_grow_linearly_a_cold_start_is_the_full_fold_a_compaction_drops_segments(
    system: System,
) -> None:
    c = system.container
    store = PostgresContextSnapshots(datastore(system))
    store.create_table()
    snapshots = Measured(store)
    sid, run_id = start(c.sessions)
    state = RunState(sid, run_id, c.sessions, c.bridge, snapshots, EVERY)
    await state.load()
    state.follow(ContextBuilder(FRAME))
    while state.version < 2000:
        await run_steps(state, c.sessions, run_id, 10)

    # Linear: the second thousand events cost what the first did (one row a session,
    # rewritten whole, cost three times as much: quadratic in all).
    first, second = snapshots.bytes_through(1000), snapshots.bytes_through(2000)
    second -= first
    assert len(snapshots.written) >= 19
    assert 0.8 * first < second < 1.25 * first, (first, second)
    assert epochs(system, sid) == {0}

    cold = RunState(sid, run_id, c.sessions, c.bridge, snapshots, EVERY)
    await cold.load()
    cold.follow(ContextBuilder(FRAME))
    assert len(cold.log) < EVERY  # the tail after the newest snapshot
    events = list(c.sessions.session_events(sid))
    assert cold.context is not None
    assert cold.context.request_and_estimate() == full_fold(events)

    # A compaction starts a new epoch: its snapshot is kept at once, and what it
    # replaced is dropped; a start from it is still the full fold.
    summary = "The user asked about heat pumps; forty searches found the answer."
    receipt = await cold.record(
        c.sessions.record_compaction, sid, summary, cold.version - 10, 5000, 500
    )
    assert epochs(system, sid) == {receipt.version}
    await run_steps(cold, c.sessions, run_id, 40)
    again = RunState(sid, run_id, c.sessions, c.bridge, snapshots, EVERY)
    await again.load()
    again.follow(ContextBuilder(FRAME))
    assert again.context is not None
    events = list(c.sessions.session_events(sid))
    assert again.context.request_and_estimate() == full_fold(events)
    assert epochs(system, sid) == {receipt.version}
    kept = store.latest(sid)
    assert kept is not None and len(kept.segments) >= 2  # the compaction's and one after
    # A process that holds some segments is handed only the others, and the head.
    first = min(kept.segments)
    lacking = store.latest(sid, have=[first])
    assert lacking is not None and lacking.head == kept.head
    assert set(lacking.segments) == set(kept.segments) - {first}
