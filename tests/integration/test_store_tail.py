"""The store tail hears every commit of a watched session from Postgres itself.

No NATS: the heads come from the insert's NOTIFY and one read per burst of commits,
for the whole process. A session nobody watches costs nothing and is not kept.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from uuid import UUID, uuid4

import pytest

from adapters.container import Container
from adapters.postgres.store_tail import StoreTail


@pytest.fixture
async def tail(container: Container) -> AsyncIterator[StoreTail]:
    recorder = container.recorder
    tail = StoreTail(
        container.database_url, table=recorder.events_table_name, channel=recorder.channel_name
    )
    tail.start()
    await until(lambda: tail.live)
    yield tail
    await tail.stop()


async def until(check: Callable[[], bool], timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not check():
            await asyncio.sleep(0.01)


def start(container: Container) -> UUID:
    sessions = container.sessions
    return sessions.start_session(workspace_id=uuid4(), owner_id=uuid4(), title="t").session_id


async def test_commits_of_a_watched_session_move_its_head(
    container: Container, tail: StoreTail
) -> None:
    watched, other = start(container), start(container)
    await asyncio.sleep(0.2)  # the tail has read past both starts
    tail.watch(watched)
    assert tail.head(watched) == 0  # nothing committed since it was watched
    for title in ("two", "three"):
        await asyncio.to_thread(container.sessions.rename_session, watched, title)
    await asyncio.to_thread(container.sessions.rename_session, other, "two")
    await until(lambda: tail.head(watched) == 3)
    assert tail.head(other) == 0  # not watched: not kept

    tail.unwatch(watched)
    await asyncio.to_thread(container.sessions.rename_session, watched, "four")
    await asyncio.sleep(0.2)
    assert tail.head(watched) == 0  # forgotten once its last stream went


async def test_a_burst_of_commits_is_read_in_few_statements(
    container: Container, tail: StoreTail
) -> None:
    sid = start(container)
    tail.watch(sid)
    reads = tail.reads

    def burst() -> None:
        for i in range(50):
            container.sessions.rename_session(sid, f"title {i}")

    await asyncio.to_thread(burst)
    await until(lambda: tail.head(sid) == 51)
    assert tail.reads - reads < 50  # commits announced during a read share the next one
