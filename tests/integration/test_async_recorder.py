"""The asyncio recorder against the library's (`LockedInsertRecorder`) on one database:
the same events in give identical rows out, each reads what the other wrote, concurrent
writers on one aggregate win each version once, and a reader tailing notification ids
never passes over one that commits later. A pool with no free connection says so at
once (`StoreBusy`)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Any
from uuid import UUID, uuid4

import psycopg
import pytest
from eventsourcing.persistence import IntegrityError, StoredEvent

from adapters.container import Container
from adapters.postgres.async_recorder import AsyncRecorder, StoreBusy, async_pool
from adapters.postgres.recorder import LockedInsertRecorder

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
    pool = async_pool(database_url, size=4, timeout=5.0, name="test-async-recorder")
    await pool.open(wait=True)
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
    """Writers on the loop and one on the library's recorder in a thread race for each
    next version of one aggregate; a reader tails the notification ids meanwhile."""
    aggregate, versions = uuid4(), 40
    wins: dict[int, list[str]] = {}
    start = library.max_notification_id() or 0
    done = asyncio.Event()
    seen: list[int] = []

    def won(version: int, who: str) -> None:
        wins.setdefault(version, []).append(who)

    async def loop_writer(name: str) -> None:
        while True:
            latest = await recorder.select_events(aggregate, desc=True, limit=1)
            version = (latest[0].originator_version if latest else 0) + 1
            if version > versions:
                return
            try:
                await recorder.insert_events(events(aggregate, range(version, version + 1)))
            except IntegrityError:
                continue
            won(version, name)

    def thread_writer() -> None:
        while True:
            latest = library.select_events(aggregate, desc=True, limit=1)
            version = (latest[0].originator_version if latest else 0) + 1
            if version > versions:
                return
            try:
                library.insert_events(events(aggregate, range(version, version + 1)))
            except IntegrityError:
                continue
            won(version, "thread")

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
    await asyncio.gather(*(loop_writer(f"loop-{i}") for i in range(6)))
    await asyncio.to_thread(thread.join, 30)
    done.set()
    await asyncio.wait_for(tailing, 30)
    assert sorted(wins) == list(range(1, versions + 1))
    assert all(len(who) == 1 for who in wins.values()), wins
    assert len({w for who in wins.values() for w in who}) > 1, "the writers did race"
    stored = await recorder.select_events(aggregate)
    assert [e.originator_version for e in stored] == list(range(1, versions + 1))
    assert seen == sorted(seen) and len(seen) == versions


async def test_a_pool_with_no_free_connection_says_so_at_once(
    library: LockedInsertRecorder, database_url: str
) -> None:
    pool = async_pool(database_url, size=1, timeout=0.2, name="test-busy")
    await pool.open(wait=True)
    busy = AsyncRecorder(pool, library)
    try:
        async with pool.connection():  # the only connection, held
            with pytest.raises(StoreBusy, match=r"no database connection free within 0\.2 s"):
                await busy.insert_events(events(uuid4(), range(1, 2)))
        assert len(await busy.insert_events(events(uuid4(), range(1, 2)))) == 1
    finally:
        await pool.close()
