"""The rate-limit counters on the event loop (`PostgresLoopCounters`) against the same
counters through the threads, on one real Postgres: one count for both, the same
refusals and retry times; a request counted without a thread; a busy or unreachable
loop pool handled as the threads' path handles it."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from eventsourcing.postgres import PostgresDatastore
from psycopg.conninfo import make_conninfo

from adapters.http.middleware.limits import RateLimits
from adapters.postgres.limit_counters import PostgresCounters
from adapters.postgres.loop_counters import PostgresLoopCounters
from adapters.postgres.loop_pool import LoopPool
from application.bridge import SyncBridge
from tests.fakes.bridge import CountingBridge
from tests.integration.test_limit_counters import Clock, lets_through

pytestmark = pytest.mark.integration


@pytest.fixture
async def pool(database_url: str) -> AsyncIterator[LoopPool]:
    pool = LoopPool(database_url, size=2, timeout=5.0, name="test-loop-counters")
    yield pool
    await pool.close()


@pytest.fixture
async def bridge() -> AsyncIterator[CountingBridge]:
    bridge = CountingBridge()
    yield bridge
    bridge.close()


def made(counters: PostgresCounters) -> PostgresCounters:
    counters.create_tables()
    return counters


def limits_on(
    counters: PostgresCounters, pool: LoopPool, bridge: SyncBridge, requests: int, streams: int
) -> RateLimits:
    """The limits as the API wires them: `counters` on the loop's `pool`, else the threads."""
    return RateLimits(
        requests_per_minute=requests,
        streams_per_user=streams,
        counters=counters,
        bridge=bridge,
        loop_counters=PostgresLoopCounters(counters, pool),
    )


async def test_the_loop_and_the_threads_keep_one_count_with_the_same_refusals(
    datastore: PostgresDatastore, pool: LoopPool
) -> None:
    clock = Clock()
    threads = made(PostgresCounters(datastore, clock=clock))
    loop = PostgresLoopCounters(PostgresCounters(datastore, clock=clock), pool)
    loop.counters.create_tables()
    assert await loop.hit("user:1", requests=3, uploads=None) is None
    assert threads.hit("user:1", requests=3, uploads=None) is None
    assert await loop.hit("user:1", requests=3, uploads=1) is None  # an upload is a request
    for refused in (await loop.hit("user:1", requests=3, uploads=None),
                    threads.hit("user:1", requests=3, uploads=None)):  # fmt: skip
        assert refused is not None and refused.limit == "requests"
        assert refused.retry_after == pytest.approx(
            40.0
        )  # as tests/integration/test_limit_counters
    over = await loop.hit("user:2", requests=3, uploads=1)
    assert over is None
    over = threads.hit("user:2", requests=3, uploads=1)
    assert over is not None and over.limit == "uploads"

    first, over = await loop.admit_stream("user:3", requests=5, streams=2)
    assert first and over is None
    second, _ = threads.admit_stream("user:3", requests=5, streams=2)
    assert second and second != first
    assert await loop.admit_stream("user:3", requests=5, streams=2) == (None, None)  # full
    await loop.close_stream(second)
    third, _ = await loop.admit_stream("user:3", requests=5, streams=2)
    assert third, "the slot closed on the loop is free again"
    threads.close_stream(third)
    assert threads.open_stream("user:3", 2) is not None
    clock.now += 80  # two windows on: the count starts again for both
    assert await loop.hit("user:1", requests=3, uploads=None) is None


async def test_a_request_and_a_stream_are_counted_on_the_loop_without_a_thread(
    datastore: PostgresDatastore, pool: LoopPool, bridge: CountingBridge
) -> None:
    counters = PostgresCounters(datastore)
    limits = limits_on(counters, pool, bridge, 3, 1)
    assert await limits.enter("user:1") is None  # the tables are made first, by a thread
    assert bridge.calls == 1 and counters.ready
    assert await limits.enter("user:1", stream=True) is None
    refused = await limits.enter("user:1", stream=True)  # its one slot is taken
    assert refused is not None and refused.limit == "streams"
    await limits.leave("user:1")
    assert limits.streams.total == 0
    assert await limits.enter("user:1", upload=True) is None
    refused = await limits.enter("user:1")
    assert refused is not None and refused.limit == "requests"
    assert refused.retry_after >= 1
    assert limits.refused == {"requests": 1, "streams": 1, "uploads": 0}
    assert bridge.calls == 1, "every count after the first was sent on the loop"


async def test_with_the_loop_pool_busy_the_threads_count(
    datastore: PostgresDatastore, database_url: str, bridge: CountingBridge
) -> None:
    busy = LoopPool(database_url, size=1, timeout=0.2, name="test-busy-counters")
    counters = made(PostgresCounters(datastore))
    limits = limits_on(counters, busy, bridge, 2, 1)
    try:
        async with busy.connection():  # its only connection, held
            assert await limits.enter("user:1", stream=True) is None
            await limits.leave("user:1")
            assert await limits.enter("user:1") is None
            refused = await limits.enter("user:1")
        assert refused is not None and refused.limit == "requests"
        assert bridge.calls == 4, "each count went through a thread"
        assert counters.open_stream("user:1", 1) is not None, "the slot was given back"
    finally:
        await busy.close()


async def test_a_failing_statement_on_the_loop_lets_requests_through_and_says_so(
    datastore: PostgresDatastore,
    database_url: str,
    bridge: CountingBridge,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The loop's counters' statements fail (a database without the tables): the limits
    fail open, as when the threads' counters cannot be reached."""
    nowhere = LoopPool(
        make_conninfo(database_url, dbname="postgres"), size=1, timeout=5.0, name="test-failing"
    )
    counters = made(PostgresCounters(datastore))
    limits = limits_on(counters, nowhere, bridge, 1, 1)
    try:
        await lets_through(limits, caplog, upload=False)
        assert bridge.calls == 0, "the failure paused the counting: nothing went to a thread"
    finally:
        await nowhere.close()
