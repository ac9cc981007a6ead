"""Readers of one session in one process share one NATS subscription (real NATS, Postgres).

The subscription is made with the first reader and dropped with the last; every reader
still gets every stored event after its own starting version once, in order, and the
live deltas in order; a reader that stops reading holds up no one and, once it reads
again, gets its stored events from the store; readers see only their own session.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from uuid import UUID, uuid4

import pytest
from nats.aio.client import Client as NATS

from adapters.bootstrap.http import session_feed  # the app's own wiring
from adapters.container import Container
from adapters.nats import session_hub
from adapters.nats.live import NatsDeltaSink
from adapters.nats.session_feed import FeedItem, Live, Stored
from adapters.services import Services
from domain.conversation import TextDelta
from tests.waiting import eventually_async

pytestmark = pytest.mark.integration

READERS = 20
WAIT = 30.0  # seconds: only a bound on a hang, never a measured figure


def client(services: Services) -> NATS:
    nc = services.nats
    assert nc is not None and nc.is_connected
    return nc


def subscriptions(nc: NATS, *sessions: UUID) -> int:
    """The client's subscriptions on subjects of these sessions (the relay and the
    projections hold others, made when they please)."""
    return sum(1 for s in nc._subs.values() if any(str(i) in s.subject for i in sessions))


async def new_session(container: Container, renames: int = 0) -> UUID:
    """A session at version `1 + renames`."""
    sid = container.sessions.start_session(
        workspace_id=uuid4(), owner_id=uuid4(), title="shared"
    ).session_id
    await append(container, sid, renames)
    return sid


async def append(container: Container, sid: UUID, n: int) -> None:
    for i in range(n):
        await container.bridge(container.sessions.rename_session, sid, f"title {i}")


async def next_stored(items: AsyncIterator[FeedItem]) -> Stored:
    async with asyncio.timeout(WAIT):
        async for item in items:
            if isinstance(item, Stored):
                return item
    raise AssertionError("the reader ended")


async def stored_until(items: AsyncIterator[FeedItem], last: int) -> list[Stored]:
    """Stored events up to version `last` (what else comes is skipped)."""
    got: list[Stored] = []
    while not got or got[-1].version < last:
        got.append(await next_stored(items))
    return got


async def test_readers_of_a_session_share_one_subscription_made_and_dropped_with_them(
    container: Container, services: Services
) -> None:
    nc = client(services)
    feed = session_feed(container, services)
    sid = await new_session(container, renames=4)  # versions 1..5
    starts = [i % 5 for i in range(READERS)]  # resuming from different Last-Event-IDs
    readers = [feed.read(sid, after, idle=60) for after in starts]
    firsts = [(await next_stored(r)).version for r in readers]  # each subscribed, caught up
    assert firsts == [after + 1 for after in starts]
    assert subscriptions(nc, sid) == 1
    assert feed.subscriptions == 1

    await append(container, sid, 10)  # versions 6..15, through the relay's publishes
    tails = await asyncio.gather(*(stored_until(r, 15) for r in readers))
    for after, first, tail in zip(starts, firsts, tails, strict=True):
        assert [first, *(s.version for s in tail)] == list(range(after + 1, 16))
        assert all(s.event.originator_id == sid for s in tail)

    for r in readers[:-1]:
        await r.aclose()
    assert subscriptions(nc, sid) == 1  # one reader left: still subscribed
    await readers[-1].aclose()
    assert subscriptions(nc, sid) == 0
    assert feed.subscriptions == 0

    again = feed.read(sid, 15, idle=60)  # a new first reader subscribes anew
    task = asyncio.create_task(next_stored(again))
    await eventually_async(lambda: feed.subscriptions == 1, timeout=WAIT, interval=0.01)
    await append(container, sid, 1)
    assert (await task).version == 16
    assert subscriptions(nc, sid) == 1
    await again.aclose()
    assert subscriptions(nc, sid) == 0


async def test_a_reader_that_stops_reading_holds_up_no_one_and_loses_no_stored_event(
    container: Container, services: Services, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(session_hub, "READER_QUEUE", 4)  # overflows after a few messages
    feed = session_feed(container, services)
    sid = await new_session(container)
    stalled, fast = feed.read(sid, 0, idle=60), feed.read(sid, 0, idle=60)
    assert (await next_stored(stalled)).version == 1
    assert (await next_stored(fast)).version == 1

    async def read_fast() -> tuple[list[int], list[str]]:
        versions: list[int] = []
        deltas: list[str] = []
        async with asyncio.timeout(WAIT):
            async for item in fast:
                if isinstance(item, Live):
                    assert isinstance(item.delta, TextDelta)
                    deltas.append(item.delta.text)
                elif isinstance(item, Stored):
                    versions.append(item.version)
                    if item.version == 31:
                        return versions, deltas
        raise AssertionError("the reader ended")

    reading = asyncio.create_task(read_fast())
    sink = NatsDeltaSink(lambda: services.nats, container.settings.nats_stream)
    for i in range(30):
        await sink.publish(sid, TextDelta(f"d{i}"))
        await append(container, sid, 1)
    versions, deltas = await reading  # while `stalled` has read nothing of this
    assert versions == list(range(2, 32))
    # Every chunk once, in order; two may arrive joined when the reader fell behind a
    # moment (`join_text`), on a busy machine.
    assert "".join(deltas) == "".join(f"d{i}" for i in range(30))

    rest = await stored_until(stalled, 31)  # overflowed long ago: refilled from the store
    assert [s.version for s in rest] == list(range(2, 32))
    await stalled.aclose()
    await fast.aclose()


async def test_a_reader_behind_a_burst_of_live_text_gets_all_of_it_joined(
    container: Container, services: Services
) -> None:
    """A model streams faster than a client reads: the chunks waiting in the reader's
    inbox are joined into bigger ones instead of overflowing it, so every character
    still arrives, in order, and the stream catches up."""
    feed = session_feed(container, services)
    sid = await new_session(container)
    reader = feed.read(sid, 0, idle=60)
    assert (await next_stored(reader)).version == 1
    sink = NatsDeltaSink(lambda: services.nats, container.settings.nats_stream)
    chunks = [f"w{i} " for i in range(4 * session_hub.READER_QUEUE)]
    for chunk in chunks:  # nobody reads meanwhile
        await sink.publish(sid, TextDelta(chunk))
    await append(container, sid, 1)  # version 2 marks the end of the burst
    text: list[str] = []
    async with asyncio.timeout(WAIT):
        async for item in reader:
            if isinstance(item, Live):
                assert isinstance(item.delta, TextDelta)
                text.append(item.delta.text)
            elif isinstance(item, Stored) and item.version == 2:
                break
    assert "".join(text) == "".join(chunks)
    assert len(text) < len(chunks)  # joined while waiting
    await reader.aclose()


async def test_readers_of_different_sessions_get_only_their_own_events(
    container: Container, services: Services
) -> None:
    nc = client(services)
    feed = session_feed(container, services)
    one, two = await new_session(container), await new_session(container)
    readers = {sid: [feed.read(sid, 0, idle=60) for _ in range(3)] for sid in (one, two)}
    for rs in readers.values():
        for r in rs:
            assert (await next_stored(r)).version == 1
    assert subscriptions(nc, one, two) == 2
    assert feed.subscriptions == 2

    for _ in range(5):
        await append(container, one, 1)
        await append(container, two, 2)
    for sid, rs in readers.items():
        last = 6 if sid == one else 11
        for got in await asyncio.gather(*(stored_until(r, last) for r in rs)):
            assert [s.version for s in got] == list(range(2, last + 1))
            assert {s.event.originator_id for s in got} == {sid}
        for r in rs:
            await r.aclose()
    assert subscriptions(nc, one, two) == 0


async def test_close_ends_every_reader_of_a_shared_subscription(
    container: Container, services: Services
) -> None:
    feed = session_feed(container, services)
    sid = await new_session(container)
    readers = [feed.read(sid, 0, idle=60) for _ in range(READERS)]
    for r in readers:
        await next_stored(r)
    waiting = [asyncio.create_task(anext(r, None)) for r in readers]
    await asyncio.sleep(0)
    feed.close()
    async with asyncio.timeout(WAIT):
        assert await asyncio.gather(*waiting) == [None] * READERS
    assert feed.subscriptions == 0
