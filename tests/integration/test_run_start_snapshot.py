"""Run start at version 50 and at version 5,000 reads about the same number of events:
the newest snapshot of the folded log, and the events after it (Postgres)."""

from __future__ import annotations

from collections.abc import Iterator
from uuid import UUID

from adapters.postgres.context_snapshots import PostgresContextSnapshots
from adapters.system import System
from application.run_state import RunState
from application.sessions import SessionService
from domain.context import ContextBuilder
from domain.events import SessionEvent
from tests.fakes.long_session import start, step
from tests.unit.test_context_snapshots import FRAME, full_fold, run_steps

EVERY = 100


class CountingReads:
    """Counts the events `session_events` hands out."""

    def __init__(self, sessions: SessionService) -> None:
        self.read = 0
        inner = sessions.session_events

        def counted(session_id: UUID, **kwargs: int | None) -> Iterator[SessionEvent]:
            events = list(inner(session_id, **kwargs))  # type: ignore[arg-type]
            self.read += len(events)
            return iter(events)

        sessions.session_events = counted  # type: ignore[method-assign]


async def run_start_reads(
    system: System, snapshots: PostgresContextSnapshots, steps: int
) -> tuple[int, int]:
    """(version, events read by a run start) for a session of `steps` steps, whose
    earlier runs kept snapshots as they went."""
    c = system.container
    sessions, bridge = c.sessions, c.bridge
    sid, run_id = start(sessions)
    for i in range(steps):
        step(sessions, sid, run_id, i, compact_every=300)
    earlier = RunState(sid, run_id, sessions, bridge, snapshots, EVERY)
    await earlier.load()
    earlier.follow(ContextBuilder(FRAME))
    await run_steps(earlier, sessions, run_id, 1)  # a run's step keeps a snapshot when due
    assert (kept := snapshots.latest(sid)) is None or kept.version > 5000
    state = RunState(sid, run_id, sessions, bridge, snapshots, EVERY)
    counting = CountingReads(sessions)
    await state.load()
    reads = counting.read
    state.follow(ContextBuilder(FRAME))
    assert state.context is not None
    events = list(sessions.session_events(sid))
    assert state.context.request_and_estimate() == full_fold(events)
    return state.version, reads


async def test_run_start_reads_as_many_events_at_version_50_as_at_5000(system: System) -> None:
    snapshots = PostgresContextSnapshots(system.container.sessions.factory.datastore)  # type: ignore[attr-defined]
    snapshots.create_table()
    short_version, short_reads = await run_start_reads(system, snapshots, 11)
    long_version, long_reads = await run_start_reads(system, snapshots, 1560)
    assert short_version < 60 and long_version > 5000
    assert short_reads == short_version  # no snapshot yet: the whole (short) log
    assert long_reads <= EVERY
    assert abs(long_reads - short_reads) <= EVERY
