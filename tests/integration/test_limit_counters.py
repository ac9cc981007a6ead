"""The shared limit counters on real Postgres: two `PostgresCounters` over one database
are two API replicas. Their clock is passed in, so windows and leases move on command."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from eventsourcing.postgres import PostgresDatastore

from adapters.container import Container
from adapters.http.middleware.limit_counters import admit_in_two_steps
from adapters.http.middleware.limits import RateLimits
from adapters.postgres.limit_counters import PostgresCounters
from tests.e2e.client import free_port
from tests.waiting import eventually

pytestmark = pytest.mark.integration


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_080.0  # 40 s into a minute

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def pair(datastore: PostgresDatastore, clock: Clock) -> tuple[PostgresCounters, PostgresCounters]:
    """Two replicas' counters, one clock, a lease of 30 s."""
    return PostgresCounters(datastore, clock=clock), PostgresCounters(datastore, clock=clock)


def test_the_counters_are_one_for_both_replicas_and_a_refusal_costs_nothing(
    pair: tuple[PostgresCounters, PostgresCounters], clock: Clock
) -> None:
    a, b = pair
    for n in range(3):
        assert (a if n % 2 else b).hit("user:1", requests=3, uploads=None) is None
    for _ in range(5):
        over = a.hit("user:1", requests=3, uploads=None)
        assert over is not None and over.limit == "requests"
        # 20 s to the window's end, then a third of the next: 3 hits weigh 2 by then
        assert over.retry_after == pytest.approx(40.0)
    assert b.hit("user:2", requests=3, uploads=None) is None
    clock.now += 20 + 60  # two windows on: the refusals left nothing behind
    for _ in range(3):
        assert b.hit("user:1", requests=3, uploads=None) is None


def test_an_upload_counts_as_a_request_and_a_refused_one_as_neither(
    pair: tuple[PostgresCounters, PostgresCounters],
) -> None:
    a, b = pair
    assert a.hit("user:1", requests=3, uploads=1) is None
    over = b.hit("user:1", requests=3, uploads=1)
    assert over is not None and over.limit == "uploads"
    assert a.hit("user:1", requests=3, uploads=None) is None
    assert b.hit("user:1", requests=3, uploads=None) is None  # the refused upload took no room
    over = a.hit("user:1", requests=3, uploads=None)
    assert over is not None and over.limit == "requests"


def test_the_last_window_counts_for_what_is_left_of_it(
    pair: tuple[PostgresCounters, PostgresCounters], clock: Clock
) -> None:
    """A sliding window, estimated: last minute's hits weigh by the part of the sliding
    minute that still overlaps it."""
    a, b = pair
    for _ in range(10):
        assert a.hit("user:1", requests=10, uploads=None) is None
    clock.now += 20 + 6  # 6 s into the next window: the last one weighs 0.9, 9 of 10
    assert b.hit("user:1", requests=10, uploads=None) is None
    over = a.hit("user:1", requests=10, uploads=None)
    assert over is not None and over.limit == "requests"
    assert over.retry_after == pytest.approx(6.0)  # at 12 s in, 10 * 0.8 + 1 leaves room
    clock.now += 6
    assert b.hit("user:1", requests=10, uploads=None) is None


def test_retry_after_never_exceeds_a_window(
    pair: tuple[PostgresCounters, PostgresCounters], clock: Clock
) -> None:
    a, _ = pair
    clock.now -= 40  # the start of a minute: a burst fills it at once
    for _ in range(4):
        assert a.hit("user:1", requests=4, uploads=None) is None
    over = a.hit("user:1", requests=4, uploads=None)
    assert over is not None and 1.0 <= over.retry_after <= 60.0


def test_old_windows_and_long_expired_leases_are_deleted_now_and_then(
    pair: tuple[PostgresCounters, PostgresCounters], clock: Clock, datastore: PostgresDatastore
) -> None:
    a, _ = pair
    a.hit("user:1", requests=5, uploads=None)
    a.open_stream("user:1", 5)
    clock.now += 3600
    a.sweep()
    a.hit("user:2", requests=5, uploads=None)
    a.open_stream("user:2", 5)
    with datastore.get_connection() as conn:
        windows = conn.execute("SELECT caller FROM rate_limit_windows").fetchall()
        streams = conn.execute("SELECT caller FROM rate_limit_streams").fetchall()
    assert [r["caller"] for r in windows] == [r["caller"] for r in streams] == ["user:2"]


def test_stream_slots_are_shared_and_released(
    pair: tuple[PostgresCounters, PostgresCounters],
) -> None:
    a, b = pair
    first = a.open_stream("user:1", 2)
    assert first is not None and b.open_stream("user:1", 2) is not None
    assert a.open_stream("user:1", 2) is None and b.open_stream("user:1", 2) is None
    assert a.open_stream("user:2", 2) is not None
    a.close_stream(first)
    assert b.open_stream("user:1", 2) is not None


def test_replicas_racing_for_a_callers_last_slot_take_it_once(
    datastore: PostgresDatastore, clock: Clock
) -> None:
    replicas = [PostgresCounters(datastore, clock=clock) for _ in range(8)]
    replicas[0].create_tables()

    def open_one(barrier: threading.Barrier, key: str, counters: PostgresCounters) -> bool:
        barrier.wait()
        return counters.open_stream(key, 1) is not None

    for caller in range(20):  # each round: every replica asks at once, after a barrier
        ask = functools.partial(open_one, threading.Barrier(len(replicas)), f"user:{caller}")
        with ThreadPoolExecutor(len(replicas)) as pool:
            assert sum(pool.map(ask, replicas)) == 1, f"round {caller}"


def test_opening_a_stream_leaves_its_pooled_connection_committing_durably(
    datastore: PostgresDatastore, clock: Clock
) -> None:
    info = datastore.pool.kwargs
    assert isinstance(info, dict)
    one = PostgresDatastore(
        info["dbname"], info["host"], info["port"], info["user"], info["password"]
    )  # a pool of one connection: the next statement runs where the opening did
    try:
        counters = PostgresCounters(one, clock=clock)
        assert counters.open_stream("user:1", 2) is not None
        with one.get_connection() as conn:
            row = conn.execute("SELECT current_setting('synchronous_commit') AS s").fetchone()
        assert row is not None and row["s"] == "on"  # the event store commits durably still
    finally:
        one.close()


def test_a_lease_lives_while_refreshed_and_expires_when_not(
    pair: tuple[PostgresCounters, PostgresCounters], clock: Clock
) -> None:
    a, b = pair
    kept, dropped = a.open_stream("user:1", 2), a.open_stream("user:1", 2)
    assert kept is not None and dropped is not None
    for _ in range(3):  # three leases long, refreshed every 20 s
        clock.now += 20
        a.refresh([kept])
    assert b.open_stream("user:1", 2) is not None  # the unrefreshed lease expired
    assert b.open_stream("user:1", 2) is None  # the refreshed one still holds its slot


def test_a_killed_replicas_streams_free_themselves_after_the_lease(
    datastore: PostgresDatastore,
) -> None:
    killed, alive = PostgresCounters(datastore, lease=0.5), PostgresCounters(datastore)
    assert killed.open_stream("user:1", 1) is not None  # and then nothing more from it
    assert alive.open_stream("user:1", 1) is None
    eventually(
        lambda: alive.open_stream("user:1", 1) is not None,
        timeout=30,
        what="the dead replica's lease to expire",
        interval=0.1,
    )


def test_the_shared_counters_are_created_at_once_by_racing_replicas(
    datastore: PostgresDatastore,
) -> None:
    replicas = [PostgresCounters(datastore) for _ in range(4)]

    with ThreadPoolExecutor(len(replicas)) as pool:
        list(pool.map(PostgresCounters.create_tables, replicas))
    assert replicas[0].hit("user:1", requests=1, uploads=None) is None


@pytest.fixture
def unreachable() -> Iterator[PostgresDatastore]:
    """A datastore whose Postgres does not answer (nothing listens on its port)."""
    store = PostgresDatastore(
        "postgres", "127.0.0.1", str(free_port()), "nobody", "", connect_timeout=1
    )
    yield store
    store.close()


async def test_without_postgres_the_limits_let_requests_through_and_say_so(
    unreachable: PostgresDatastore, container: Container, caplog: pytest.LogCaptureFixture
) -> None:
    limits = RateLimits(
        requests_per_minute=1,
        streams_per_user=1,
        counters=PostgresCounters(unreachable),
        bridge=container.bridge,
    )
    await lets_through(limits, caplog, upload=True)


async def lets_through(
    limits: RateLimits, caplog: pytest.LogCaptureFixture, *, upload: bool
) -> None:
    """Limits of one request and one stream a minute that let three of each through
    (and their slots go), saying that they do not count."""
    with caplog.at_level(logging.WARNING, logger="adapters.http.middleware.limits"):
        for _ in range(3):
            assert await limits.enter("user:1", upload=upload) is None
            assert await limits.enter("user:1", stream=True) is None
    assert limits.streams.total == 3
    for _ in range(3):
        await limits.leave("user:1")
    assert limits.streams.total == 0
    assert any("not counted" in r.getMessage() for r in caplog.records), caplog.text


def test_a_stream_request_takes_its_slot_and_is_counted_in_one_step_as_in_two(
    pair: tuple[PostgresCounters, PostgresCounters], clock: Clock
) -> None:
    """`admit_stream` (one statement) gives what a slot opened, then the request counted,
    gives: the same refusals, nothing kept by a refusal, the same retry time."""
    a, b = pair
    one, two = a.admit_stream, functools.partial(admit_in_two_steps, b)
    for admit, caller in ((one, "user:1"), (two, "user:2")):
        first, over = admit(caller, requests=3, streams=2)
        assert first and over is None
        second, _ = admit(caller, requests=3, streams=2)
        assert second and second != first
        assert admit(caller, requests=3, streams=2) == (None, None)  # no slot free
        b.close_stream(first)
        third, _ = admit(caller, requests=3, streams=2)  # the refusal counted nothing
        assert third
        b.close_stream(third)
        slot, over = admit(caller, requests=3, streams=2)  # a fourth request this minute
        assert slot is None and over is not None and over.limit == "requests"
        assert over.retry_after == pytest.approx(40.0)
        assert b.open_stream(caller, 2) is not None, "the refused request kept no slot"
    clock.now += 80  # two windows on
    slot, over = a.admit_stream("user:1", requests=3, streams=3)
    assert slot and over is None
