"""The asyncio recorder against the library's (`LockedInsertRecorder`) on one database:
the same events in give identical rows out, each reads what the other wrote, concurrent
writers on one aggregate win each version once, and a reader tailing notification ids
never passes over one that commits later. A pool with no free connection says so at
once (`StoreBusy`)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from uuid import UUID, uuid4

import psycopg
import pytest
from eventsourcing.persistence import IntegrityError, StoredEvent

from adapters.container import Container
from adapters.postgres.async_recorder import AsyncRecorder
from adapters.postgres.loop_pool import LoopPool
from adapters.postgres.recorder import LockedInsertRecorder
from application.loop_writes import StoreBusy

pytestmark = pytest.mark.integration

TOPIC = "domain.session:AgentSession.SessionRenamed"


def events(aggregate: UUID, versions: range, size: int = 40) -> list[StoredEvent]:
    return [
        StoredEvent(aggregate, v, TOPIC, f'{{"title":"{v:0{size}d}"}}'.encode()) for v in versions
    ]


@pytest.fixture
def library(container: Container) -> LockedInsertRecorder:
    recorder = container.recorder
    assert isinstance(recorder, LockedInsertRecorder)
    return recorder


@pytest.fixture
async def recorder(
    library: LockedInsertRecorder, database_url: str
) -> AsyncIterator[AsyncRecorder]:
    pool = LoopPool(database_url, size=4, timeout=5.0, name="test-async-recorder")
    await pool.open(wait=True)  # the writers on the loop race from their first statement
    try:
        yield AsyncRecorder(pool, library)
    finally:
        await pool.close()


def rows(database_url: str, aggregate: UUID) -> list[tuple[Any, ...]]:
    """Everything stored of `aggregate` but its id and notification ids."""
    with psycopg.connect(database_url) as conn:
        return conn.execute(
            "SELECT originator_version, topic, state, prev_hash, hash FROM tokendance_events"
            " WHERE originator_id = %s ORDER BY originator_version",
            (aggregate,),
        ).fetchall()


async def test_the_same_events_in_give_identical_rows_out(
    library: LockedInsertRecorder, recorder: AsyncRecorder, database_url: str
) -> None:
    by_library, by_loop = uuid4(), uuid4()
    library.insert_events(events(by_library, range(1, 4)))
    library.insert_events(events(by_library, range(4, 6)))
    ids = await recorder.insert_events(events(by_loop, range(1, 4)))
    ids += await recorder.insert_events(events(by_loop, range(4, 6)))
    stored = rows(database_url, by_loop)
    assert len(stored) == 5 and all(r[4] is not None for r in stored), "hashed as it went in"
    assert stored == rows(database_url, by_library)  # the chain's hashes included
    assert ids == sorted(ids) and len(set(ids)) == 5


async def test_each_reads_what_the_other_wrote(
    library: LockedInsertRecorder, recorder: AsyncRecorder
) -> None:
    before = library.max_notification_id() or 0
    by_library, by_loop = uuid4(), uuid4()
    library.insert_events(events(by_library, range(1, 4)))
    await recorder.insert_events(events(by_loop, range(1, 3)))
    for aggregate in (by_library, by_loop):
        mine = await recorder.select_events(aggregate)
        assert mine == list(library.select_events(aggregate))
        assert await recorder.select_events(aggregate, gt=1, lte=2) == list(
            library.select_events(aggregate, gt=1, lte=2)
        )
        assert await recorder.select_events(aggregate, desc=True, limit=1) == list(
            library.select_events(aggregate, desc=True, limit=1)
        )
    assert [e.originator_version for e in await recorder.select_events(by_library, gt=1)] == [2, 3]
    assert await recorder.max_notification_id() == library.max_notification_id() == before + 5
    mine = await recorder.select_notifications(before, 10)
    theirs = library.select_notifications(before + 1, 10)
    assert [(n.id, n.originator_id, n.originator_version, n.state) for n in mine] == [
        (n.id, n.originator_id, n.originator_version, n.state) for n in theirs
    ]
    assert len(mine) == 5
    assert [n.id for n in await recorder.select_notifications(before, 10, stop=before + 2)] == [
        before + 1,
        before + 2,
    ]


async def test_a_version_already_stored_is_the_library_s_integrity_error(
    library: LockedInsertRecorder, recorder: AsyncRecorder
) -> None:
    aggregate = uuid4()
    library.insert_events(events(aggregate, range(1, 3)))
    with pytest.raises(IntegrityError):
        await recorder.insert_events(events(aggregate, range(2, 4)))
    assert [e.originator_version for e in await recorder.select_events(aggregate)] == [1, 2]


async def test_concurrent_writers_win_each_version_once_and_readers_see_ids_in_order(
    library: LockedInsertRecorder, recorder: AsyncRecorder
) -> None:
    """Six writers on the loop and one on the library's recorder in a thread race for
    each next version of one aggregate, sent at once (a barrier each round); a reader
    tails the notification ids meanwhile."""
    aggregate, versions, writers = uuid4(), 40, 7
    wins: dict[int, list[str]] = {}
    losses: list[str] = []
    start = library.max_notification_id() or 0
    done = asyncio.Event()
    seen: list[int] = []
    # Each round every writer has read the last version (the round before committed
    # before its losers heard of it), then all send the next one together.
    barrier = threading.Barrier(writers, timeout=30)
    waiting = ThreadPoolExecutor(writers)  # the loop's writers wait at the barrier here

    def next_version(latest: list[StoredEvent]) -> int:
        return (latest[0].originator_version if latest else 0) + 1

    def outcome(version: int, who: str, won: bool) -> None:
        (wins.setdefault(version, []) if won else losses).append(who)

    async def loop_writer(name: str) -> None:
        while True:
            version = next_version(await recorder.select_events(aggregate, desc=True, limit=1))
            await asyncio.get_running_loop().run_in_executor(waiting, barrier.wait)
            if version > versions:
                return
            try:
                await recorder.insert_events(events(aggregate, range(version, version + 1)))
            except IntegrityError:
                outcome(version, name, False)
            else:
                outcome(version, name, True)

    def thread_writer() -> None:
        while True:
            version = next_version(library.select_events(aggregate, desc=True, limit=1))
            barrier.wait()
            if version > versions:
                return
            try:
                library.insert_events(events(aggregate, range(version, version + 1)))
            except IntegrityError:
                outcome(version, "thread", False)
            else:
                outcome(version, "thread", True)

    async def reader() -> None:
        after = start
        while True:
            finished = done.is_set()  # then one more read sees every commit
            batch = await recorder.select_notifications(after, 100)
            for n in batch:
                assert n.id > after, "an id below one already read appeared later"
                seen.append(n.id)
                after = n.id
            if finished and not batch:
                return
            await asyncio.sleep(0)

    thread = threading.Thread(target=thread_writer)
    tailing = asyncio.create_task(reader())
    thread.start()
    await asyncio.gather(*(loop_writer(f"loop-{i}") for i in range(writers - 1)))
    await asyncio.to_thread(thread.join, 30)
    waiting.shutdown()
    done.set()
    await asyncio.wait_for(tailing, 30)
    assert sorted(wins) == list(range(1, versions + 1))
    assert all(len(who) == 1 for who in wins.values()), wins
    assert len(losses) == versions * (writers - 1), "every other writer lost each version"
    assert len({w for who in wins.values() for w in who}) > 1, wins
    stored = await recorder.select_events(aggregate)
    assert [e.originator_version for e in stored] == list(range(1, versions + 1))
    assert seen == sorted(seen) and len(seen) == versions


async def test_a_pool_with_no_free_connection_says_so_at_once(
    library: LockedInsertRecorder, database_url: str
) -> None:
    pool = LoopPool(database_url, size=1, timeout=0.2, name="test-busy")
    busy = AsyncRecorder(pool, library)
    try:
        async with pool.connection():  # the only connection, held
            with pytest.raises(StoreBusy, match=r"no database connection free within 0\.2 s"):
                await busy.insert_events(events(uuid4(), range(1, 2)))
        assert len(await busy.insert_events(events(uuid4(), range(1, 2)))) == 1
    finally:
        await pool.close()
