"""The session feed reads the store whenever NATS cannot be trusted (no real NATS here).

A fake client stands in for NATS: the test decides what it delivers and whether it is
connected. Whatever NATS loses (one message, the last one, everything during an
outage), the reader still yields every stored version once, in order.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import cast
from uuid import UUID, uuid4

import pytest
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from adapters.nats import session_feed
from adapters.nats.session_feed import FeedItem, Idle, SessionFeed, Stored
from application.bridge import SyncBridge
from application.sessions import SessionService
from schemas.nats import StoredEventHeaders

Callback = Callable[[Msg], Awaitable[None]]


class FakeSubscription:
    def __init__(self, nc: FakeNats, subject: str) -> None:
        self.nc, self.subject = nc, subject

    async def unsubscribe(self) -> None:
        self.nc.callbacks.pop(self.subject, None)


class FakeNats:
    """Connected or not, as the test says; delivers only what the test hands it."""

    def __init__(self) -> None:
        self.is_connected = True
        self.callbacks: dict[str, Callback] = {}
        self.subscribed = 0

    async def subscribe(self, subject: str, cb: Callback) -> FakeSubscription:
        self.callbacks[subject] = cb
        self.subscribed += 1
        return FakeSubscription(self, subject)

    async def deliver(self, sessions: SessionService, version: int) -> None:
        """The relay's message for one stored version of the session."""
        (n,) = [
            n
            for n in sessions.recorder.select_notifications(1, 1000)
            if n.originator_version == version
        ]
        headers = StoredEventHeaders(n.id, n.topic, n.originator_id, n.originator_version).headers(
            0
        )
        subject = f"s.events.{n.originator_id}"
        msg = Msg(cast(NATS, self), subject=subject, data=n.state, headers=headers)
        await self.callbacks[f"s.*.{n.originator_id}"](msg)  # the session's one subscription


@pytest.fixture(autouse=True)
def quick_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session_feed, "POLL_WITHOUT_NATS", 0.05)
    monkeypatch.setattr(session_feed, "CHECK_NATS", 0.05)


@pytest.fixture
def bridge() -> Iterator[SyncBridge]:
    bridge = SyncBridge(2)
    yield bridge
    bridge.close()


def new_session(sessions: SessionService) -> UUID:
    return sessions.start_session(workspace_id=uuid4(), owner_id=uuid4(), title="t").session_id


async def next_stored(items: AsyncIterator[FeedItem], timeout: float = 5.0) -> int:
    """The version of the next stored event (skipping keep-alives)."""
    async with asyncio.timeout(timeout):
        async for item in items:
            if isinstance(item, Stored):
                return item.version
    raise AssertionError("the reader ended")


class Heads:
    """What the store tail would say: the test announces each commit."""

    def __init__(self) -> None:
        self.live = True
        self.heads: dict[UUID, int] = {}
        self.watchers: Counter[UUID] = Counter()

    def watch(self, session_id: UUID) -> None:
        self.watchers[session_id] += 1

    def unwatch(self, session_id: UUID) -> None:
        self.watchers[session_id] -= 1

    def head(self, session_id: UUID) -> int:
        return self.heads.get(session_id, 0)


class CountingSessions:
    """The session service, counting the store reads a feed makes."""

    def __init__(self, sessions: SessionService) -> None:
        self.inner, self.reads = sessions, 0
        self.mapper = sessions.mapper
        self.read_after: list[int] = []  # the version each read began after

    def session_events(self, session_id: UUID, after: int = 0) -> Iterator[object]:
        self.reads += 1
        self.read_after.append(after)
        return self.inner.session_events(session_id, after=after)

    async def events_after_on_loop(
        self, bridge: SyncBridge, session_id: UUID, after: int
    ) -> list[object]:
        return list(self.session_events(session_id, after))


def feed_on(
    sessions: SessionService,
    bridge: SyncBridge,
    nc: list[FakeNats | None],
    tail: Heads | None = None,
) -> SessionFeed:
    """A feed whose connection is `nc[0]` (the test swaps it)."""
    return SessionFeed(
        sessions=sessions, bridge=bridge, connection=lambda: cast(NATS | None, nc[0]), stream="S",
        tail=tail,
    )  # fmt: skip


async def test_a_commit_nats_never_brings_comes_from_the_store_after_the_grace(
    sessions: SessionService, bridge: SyncBridge, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NATS connected but silent (a relay behind, a server dead unnoticed), and the next
    keep-alive an hour away: the store's word is enough."""
    monkeypatch.setattr(session_feed, "GRACE", 0.1)
    sid = new_session(sessions)
    nc, heads = FakeNats(), Heads()
    items = feed_on(sessions, bridge, [nc], heads).read(sid, 0, idle=3600)
    assert await next_stored(items) == 1
    assert heads.watchers[sid] == 1
    sessions.rename_session(sid, "two")  # NATS will never bring it
    heads.heads[sid] = 2
    assert await next_stored(items) == 2
    sessions.rename_session(sid, "three")
    heads.heads[sid] = 3
    await nc.deliver(sessions, 3)  # NATS in time: from NATS, once
    assert await next_stored(items) == 3
    await items.aclose()
    assert heads.watchers[sid] == 0


async def test_an_outage_with_the_tail_listening_reads_only_on_commits(
    sessions: SessionService, bridge: SyncBridge
) -> None:
    sid = new_session(sessions)
    counting = CountingSessions(sessions)
    nc, heads = FakeNats(), Heads()
    feed = feed_on(cast(SessionService, counting), bridge, [nc], heads)
    items = feed.read(sid, 0, idle=3600)
    assert await next_stored(items) == 1
    nc.is_connected = False
    await asyncio.sleep(0.5)  # ten polls' worth of quiet (the polls are 0.05 s here)
    assert counting.reads == 1  # only the first catch-up: no polling
    sessions.rename_session(sid, "during the outage")
    heads.heads[sid] = 2
    assert await next_stored(items) == 2  # at once: NATS is away
    await items.aclose()


async def test_lost_messages_come_from_the_store_with_nats_up(
    sessions: SessionService, bridge: SyncBridge
) -> None:
    sid = new_session(sessions)
    nc = FakeNats()
    items = feed_on(sessions, bridge, [nc]).read(sid, 0, idle=0.2)
    assert await next_stored(items) == 1
    sessions.rename_session(sid, "two")
    sessions.rename_session(sid, "three")
    await nc.deliver(sessions, 3)  # 2 was lost: the store fills the gap
    assert [await next_stored(items), await next_stored(items)] == [2, 3]
    sessions.rename_session(sid, "four")  # the last message, lost: read before a keep-alive
    assert await next_stored(items) == 4
    await nc.deliver(sessions, 4)  # arrives late: not repeated
    assert isinstance(await anext(items), Idle)
    await items.aclose()


async def test_events_in_hand_are_sent_as_they_are_and_not_read_back(
    sessions: SessionService, bridge: SyncBridge
) -> None:
    sid = new_session(sessions)
    written = list(sessions.session_events(sid))  # as a command's receipt holds them
    sessions.rename_session(sid, "two")  # the run wrote on before the stream began
    counting = CountingSessions(sessions)
    feed = feed_on(cast(SessionService, counting), bridge, [FakeNats()])
    items = feed.read(sid, 0, idle=0.2, known=written)
    first = await anext(items)
    assert isinstance(first, Stored) and first.event is written[0]  # the very object
    assert await next_stored(items) == 2  # then the store, from after what was in hand
    assert counting.read_after == [1]
    await items.aclose()

    out_of_order = feed.read(sid, 1, idle=0.2, known=written)  # not the next: ignored
    assert await next_stored(out_of_order) == 2
    await out_of_order.aclose()


async def test_an_outage_reads_the_store_and_the_next_client_is_subscribed(
    sessions: SessionService, bridge: SyncBridge
) -> None:
    sid = new_session(sessions)
    first, second = FakeNats(), FakeNats()
    current: list[FakeNats | None] = [first]
    items = feed_on(sessions, bridge, current).read(sid, 0, idle=60)
    assert await next_stored(items) == 1
    first.is_connected = False  # NATS away: nothing will be delivered
    sessions.rename_session(sid, "during the outage")
    assert await next_stored(items) == 2
    current[0] = second  # NATS back (a new client): subscribed again, before the store read
    sessions.rename_session(sid, "while resubscribing")
    assert await next_stored(items) == 3
    assert second.subscribed == 1  # events and live deltas: one subscription
    sessions.rename_session(sid, "live again")
    await second.deliver(sessions, 3)  # already sent: skipped
    await second.deliver(sessions, 4)
    assert await next_stored(items) == 4
    await items.aclose()


async def test_close_ends_every_reader(sessions: SessionService, bridge: SyncBridge) -> None:
    sid = new_session(sessions)
    feed = feed_on(sessions, bridge, [FakeNats()])
    items = feed.read(sid, 0, idle=60)
    assert await next_stored(items) == 1
    feed.close()
    with pytest.raises(StopAsyncIteration):
        async with asyncio.timeout(5):
            await anext(items)
