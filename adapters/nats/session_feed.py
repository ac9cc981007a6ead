"""One session's events for a reader: the stored ones after a version, then the live tail.

The readers of a session in this process share one core-NATS subscription
(`<stream>.*.<session>`: the relay's JetStream publishes and the live deltas, see
`session_hub`), made with the first reader and dropped with the last. Each message is
decoded once and queued for every reader in a bounded inbox of its own, so a slow
client holds up no one; a reader whose inbox overflowed refills its stored events from
the store (its live deltas in between are lost).

A reader makes sure the subscription exists first, then catches up from the event
store, then forwards what arrives, skipping versions it already sent and refilling
from the store when it sees a gap. So a client resuming from `Last-Event-ID` gets
every stored event after it exactly once, also across a server restart (the ids are
session versions, kept in Postgres).

The store stays the source of truth: while NATS is away (never there, or the
connection dropped mid-stream) the reader polls the store every `POLL_WITHOUT_NATS`
seconds, and subscribes again once NATS is back, before its next store read, so the
switch leaves no gap; versions it already sent are skipped, so it repeats nothing.
With NATS up, a version the store says was committed (`StoreTail`, told by the
store's own commit notifications) that NATS has not brought within `GRACE` seconds is
read from the store: a lost message, a relay behind, or a NATS that died without the
client noticing yet delays a stored event by about that much, never until the next
keep-alive. With the tail listening, an outage needs no polling: the readers read the
store when it announces their session's commits. A quiet stream still re-reads the
store before each keep-alive. Live deltas exist only on NATS.
`SessionFeed.close()` ends every reader at once (shutdown): a client resumes from its
last id.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Protocol
from uuid import UUID

import msgspec
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg

from adapters.nats.live import from_wire
from adapters.nats.push_hub import PushHub
from adapters.nats.session_hub import Inbox, Overflowed, SessionHub
from adapters.nats.stream import BadMessage, to_notification
from application.bridge import SyncBridge
from application.sessions import SessionService
from domain.conversation import LiveItem, TextDelta, ThinkingDelta
from domain.events import SessionEvent, as_session_event
from schemas import live
from schemas.nats import Subjects

POLL_WITHOUT_NATS = 0.5  # seconds between store reads while NATS and the tail are away
CHECK_NATS = 0.5  # seconds between looks at the NATS connection while the stream is quiet
GRACE = 1.0  # seconds NATS has to bring a version the store says was committed


class Behind:
    """Since when a reader has been behind the store's head: NATS has `GRACE` seconds to
    bring what the store says was committed (none while it is away)."""

    def __init__(self) -> None:
        self._since: float | None = None

    def due(self, head: int, last: int, nats_live: bool) -> bool:
        """Whether to read the store now, for a reader at `last` and a store at `head`."""
        if head <= last:
            self._since = None
            return False
        now = asyncio.get_running_loop().time()
        if self._since is None:
            self._since = now
        if nats_live and now - self._since < GRACE:
            return False
        self._since = None
        return True

    def left(self) -> float | None:
        """Seconds of grace left (None: not behind)."""
        if self._since is None:
            return None
        return self._since + GRACE - asyncio.get_running_loop().time()


class StoreHeads(Protocol):
    """The newest committed version of each session a reader watches (`StoreTail`)."""

    live: bool

    def watch(self, session_id: UUID) -> None: ...

    def unwatch(self, session_id: UUID) -> None: ...

    def head(self, session_id: UUID) -> int: ...


@dataclass(frozen=True)
class Stored:
    event: SessionEvent

    @property
    def version(self) -> int:
        return self.event.originator_version


@dataclass(frozen=True)
class Live:
    delta: LiveItem


@dataclass(frozen=True)
class Idle:
    """Nothing happened for a while: time for a keep-alive."""


FeedItem = Stored | Live | Idle
Arrival = Stored | Live  # a message of the shared subscription, decoded once


def join_text(first: Arrival, second: Arrival) -> Arrival | None:
    """Two chunks of a streaming turn's text (or thinking) as one, for a reader behind."""
    match first, second:
        case Live(TextDelta(text=a)), Live(TextDelta(text=b)):
            return Live(TextDelta(a + b))
        case Live(ThinkingDelta(thinking=a)), Live(ThinkingDelta(thinking=b)):
            return Live(ThinkingDelta(a + b))
        case _:
            return None


class SessionFeed:
    """Opens readers of one session's events (see the module docstring)."""

    def __init__(
        self,
        *,
        sessions: SessionService,
        bridge: SyncBridge,
        connection: Callable[[], NATS | None],
        stream: str,
        tail: StoreHeads | None = None,
    ) -> None:
        self.sessions = sessions
        self.tail = tail
        self.bridge = bridge
        self._connection = connection
        self.stream = stream
        self.subjects = Subjects(stream)
        self.closed = False
        self.hub: SessionHub[Arrival] = SessionHub(
            connection=self.connection, subject=self._subject, parse=self._decode, join=join_text
        )
        # Every session's stored events in one subscription, for the push sockets (`ws`).
        self.push: PushHub[Stored] = PushHub(
            connection=self.connection, stream=stream, parse=self.decode_stored
        )

    def close(self) -> None:
        """End every open reader now, and any opened later at once (shutting down)."""
        self.closed = True
        self.hub.close()
        self.push.close()

    @property
    def subscriptions(self) -> int:
        """The NATS subscriptions held for this process's readers (one per session)."""
        return self.hub.subscriptions

    async def read(
        self,
        session_id: UUID,
        after: int,
        *,
        idle: float = 15.0,
        known: Sequence[SessionEvent] = (),
    ) -> AsyncGenerator[FeedItem, None]:
        """The session's events after version `after`, then what comes, live and stored.
        `known`: the events right after `after` the caller has in hand (a command's
        receipt), sent as they are instead of read back from the store."""
        inbox = self.hub.join(session_id)
        if self.tail is not None:
            self.tail.watch(session_id)  # before the store is read: no commit falls between
        try:
            async for item in _Reader(self, session_id, after, idle, inbox).items(known):
                yield item
        finally:
            if self.tail is not None:
                self.tail.unwatch(session_id)
            await self.hub.leave(session_id, inbox)

    async def events_after(self, session_id: UUID, after: int) -> list[SessionEvent]:
        return await self.sessions.events_after_on_loop(self.bridge, session_id, after)

    def connection(self) -> NATS | None:
        nc = self._connection()
        return nc if nc is not None and nc.is_connected else None

    def _subject(self, session_id: UUID) -> str:
        """Both the session's stored events and its live deltas, in one subscription."""
        return self.subjects.of_session(session_id)

    def _decode(self, msg: Msg) -> Arrival | None:
        """A message of the session's subject, once for all its readers (None: not ours)."""
        session = msg.subject.rsplit(".", 1)[-1]
        subjects = self.subjects
        if msg.subject == subjects.live(session):
            try:
                return Live(from_wire(live.decode(msg.data)))
            except msgspec.DecodeError:
                return None
        if msg.subject != subjects.events(session):
            return None
        return self.decode_stored(msg)

    def decode_stored(self, msg: Msg) -> Stored | None:
        """A stored event the relay published (None: not one)."""
        try:
            notification = to_notification(msg)
        except BadMessage:
            return None
        return Stored(as_session_event(self.sessions.mapper.to_domain_event(notification)))


class _Reader:
    """One reader's state: the last version sent, and its inbox of the shared subscription."""

    def __init__(
        self, feed: SessionFeed, session_id: UUID, after: int, idle: float, inbox: Inbox[Arrival]
    ) -> None:
        self.feed = feed
        self.hub = feed.hub
        self.session_id = session_id
        self.last = after
        self.idle = idle
        self.inbox = inbox
        self.tail = feed.tail
        self._quiet_since = 0.0
        self.behind = Behind()

    async def items(self, known: Sequence[SessionEvent] = ()) -> AsyncIterator[FeedItem]:
        loop = asyncio.get_running_loop()
        await self.hub.subscribe(self.session_id)
        for event in known:
            if event.originator_version != self.last + 1:
                break  # not the next one: the store has the rest
            self.last = event.originator_version
            yield Stored(event)
        async for stored in self._catch_up():
            yield stored
        self._quiet_since = loop.time()
        while not self.feed.closed:
            arrival = await self.inbox.get(self._wait())
            if self.feed.closed:
                return
            sent = False
            async for item in self._next(arrival):
                sent = sent or not isinstance(item, Idle)
                yield item
            if self._store_ahead():
                async for stored in self._catch_up():
                    sent = True
                    yield stored
            if sent or loop.time() - self._quiet_since >= self.idle:
                self._quiet_since = loop.time()

    def _next(self, arrival: Arrival | Overflowed | None) -> AsyncIterator[FeedItem]:
        if arrival is None:
            return self._quiet()
        if isinstance(arrival, Overflowed):
            return self._catch_up()  # messages were dropped for this reader: the store has them
        return self._handle(arrival)

    async def _quiet(self) -> AsyncIterator[FeedItem]:
        """No message for a while: read the store when NATS (and the tail) is away or a
        keep-alive is due."""
        due = asyncio.get_running_loop().time() - self._quiet_since >= self.idle
        if not self.hub.is_live(self.session_id):
            await self.hub.subscribe(self.session_id)  # NATS back: before the store read
            if not due and self.tail is not None and self.tail.live:
                return  # the tail says when the store has something (`_store_ahead`)
        elif not due:
            return
        if due:  # first: a store read that waits for a thread must not hold it up
            yield Idle()
        async for item in self._catch_up():
            yield item

    async def _handle(self, arrival: Arrival) -> AsyncIterator[FeedItem]:
        if isinstance(arrival, Live):
            yield arrival
            return
        if arrival.version <= self.last:
            return  # already sent (caught up from the store)
        if arrival.version > self.last + 1:  # a message went missing: the store has it
            async for item in self._catch_up():
                yield item
            return
        self.last = arrival.version
        yield arrival

    async def _catch_up(self) -> AsyncIterator[Stored]:
        for event in await self.feed.events_after(self.session_id, self.last):
            self.last = event.originator_version
            yield Stored(event)

    def _store_ahead(self) -> bool:
        """The store has a version that NATS has not brought in time."""
        if self.tail is None:
            return False
        head = self.tail.head(self.session_id)
        return self.behind.due(head, self.last, self.hub.is_live(self.session_id))

    def _wait(self) -> float:
        if (left := self.behind.left()) is not None:  # wake when NATS's grace is over
            return max(0.01, min(left, CHECK_NATS))
        if self.hub.is_live(self.session_id):
            return CHECK_NATS
        return CHECK_NATS if self.tail is not None and self.tail.live else POLL_WITHOUT_NATS
