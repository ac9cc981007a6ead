"""One session's events for a reader: the stored ones after a version, then the live tail.

The reader subscribes first (core NATS: the relay's JetStream publishes and the live
deltas), then catches up from the event store, then forwards what arrives, skipping
versions it already sent and refilling from the store when it sees a gap. So a
client resuming from `Last-Event-ID` gets every stored event after it exactly once,
also across a server restart (the ids are session versions, kept in Postgres).

The store stays the source of truth: while NATS is away (never there, or the
connection dropped mid-stream) the reader polls the store every `POLL_WITHOUT_NATS`
seconds, and subscribes again once NATS is back, before its next store read, so the
switch leaves no gap; versions it already sent are skipped, so it repeats nothing.
With NATS up, a quiet stream re-reads the store before each keep-alive, so an event
whose message was lost still arrives. Live deltas exist only on NATS.
`SessionFeed.close()` ends every reader at once (shutdown): a client resumes from its
last id.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from uuid import UUID

import msgspec
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.errors import Error as NatsError

from adapters.nats.live import live_subject
from adapters.nats.stream import BadMessage, to_notification
from application.bridge import SyncBridge
from application.sessions import SessionService
from domain.conversation import TextDelta, ThinkingDelta
from domain.events import SessionEvent, as_session_event

POLL_WITHOUT_NATS = 0.5  # seconds between store reads while NATS is away
CHECK_NATS = 0.5  # seconds between looks at the NATS connection while the stream is quiet


@dataclass(frozen=True)
class Stored:
    event: SessionEvent

    @property
    def version(self) -> int:
        return self.event.originator_version


@dataclass(frozen=True)
class Live:
    delta: TextDelta | ThinkingDelta


@dataclass(frozen=True)
class Idle:
    """Nothing happened for a while: time for a keep-alive."""


FeedItem = Stored | Live | Idle


class _LiveDelta(msgspec.Struct):
    type: str
    text: str


class SessionFeed:
    """Opens readers of one session's events (see the module docstring)."""

    def __init__(
        self,
        *,
        sessions: SessionService,
        bridge: SyncBridge,
        connection: Callable[[], NATS | None],
        stream: str,
    ) -> None:
        self.sessions = sessions
        self.bridge = bridge
        self._connection = connection
        self.stream = stream
        self.closed = False
        self._queues: set[asyncio.Queue[Msg | None]] = set()

    def close(self) -> None:
        """End every open reader now, and any opened later at once (shutting down)."""
        self.closed = True
        for queue in self._queues:
            queue.put_nowait(None)

    async def read(
        self, session_id: UUID, after: int, *, idle: float = 15.0
    ) -> AsyncIterator[FeedItem]:
        reader = _Reader(self, session_id, after, idle)
        self._queues.add(reader.queue)
        try:
            async for item in reader.items():
                yield item
        finally:
            self._queues.discard(reader.queue)
            await reader.unsubscribe()

    async def events_after(self, session_id: UUID, after: int) -> list[SessionEvent]:
        return await self.bridge(_events_after, self.sessions, session_id, after)

    def connection(self) -> NATS | None:
        nc = self._connection()
        return nc if nc is not None and nc.is_connected else None

    def subjects(self, session_id: UUID) -> tuple[str, str]:
        return f"{self.stream.lower()}.events.{session_id}", live_subject(self.stream, session_id)

    def is_live_subject(self, subject: str) -> bool:
        return subject.startswith(f"{self.stream.lower()}.live.")


class _Reader:
    """One reader's state: the last version sent, its subscriptions and their client."""

    def __init__(self, feed: SessionFeed, session_id: UUID, after: int, idle: float) -> None:
        self.feed = feed
        self.session_id = session_id
        self.last = after
        self.idle = idle
        self.queue: asyncio.Queue[Msg | None] = asyncio.Queue()
        self.subscriptions: list[Subscription] = []
        self.nc: NATS | None = None  # the client the subscriptions are on
        self._quiet_since = 0.0

    async def items(self) -> AsyncIterator[FeedItem]:
        loop = asyncio.get_running_loop()
        await self._subscribe()
        async for stored in self._catch_up():
            yield stored
        self._quiet_since = loop.time()
        while not self.feed.closed:
            try:
                msg = await asyncio.wait_for(self.queue.get(), self._wait())
            except TimeoutError:
                msg = None
            if self.feed.closed:
                return
            sent = False
            async for item in self._quiet() if msg is None else self._handle(msg):
                sent = sent or not isinstance(item, Idle)
                yield item
            if sent or loop.time() - self._quiet_since >= self.idle:
                self._quiet_since = loop.time()

    async def _quiet(self) -> AsyncIterator[FeedItem]:
        """No message for a while: read the store when NATS is away or a keep-alive is due."""
        due = asyncio.get_running_loop().time() - self._quiet_since >= self.idle
        if not self._is_live():
            await self._subscribe()  # NATS back: subscribed before the store read, no gap
        elif not due:
            return
        caught = 0
        async for item in self._catch_up():
            caught += 1
            yield item
        if due and not caught:
            yield Idle()

    async def _handle(self, msg: Msg) -> AsyncIterator[FeedItem]:
        if self.feed.is_live_subject(msg.subject):
            delta = msgspec.json.decode(msg.data, type=_LiveDelta)
            thinking = delta.type == "thinking_delta"
            yield Live(ThinkingDelta(delta.text) if thinking else TextDelta(delta.text))
            return
        try:
            notification = to_notification(msg)
        except BadMessage:
            return
        version = notification.originator_version
        if version <= self.last:
            return  # already sent (caught up from the store)
        if version > self.last + 1:  # a message went missing: the store has it
            async for item in self._catch_up():
                yield item
            return
        self.last = version
        event = self.feed.sessions.mapper.to_domain_event(notification)
        yield Stored(as_session_event(event))

    async def _catch_up(self) -> AsyncIterator[Stored]:
        for event in await self.feed.events_after(self.session_id, self.last):
            self.last = event.originator_version
            yield Stored(event)

    def _is_live(self) -> bool:
        nc = self.feed.connection()
        return bool(self.subscriptions) and nc is not None and nc is self.nc

    def _wait(self) -> float:
        return CHECK_NATS if self._is_live() else POLL_WITHOUT_NATS

    async def _subscribe(self) -> None:
        nc = self.feed.connection()
        if nc is None or (nc is self.nc and self.subscriptions):
            return  # NATS away, or subscribed already (the client resubscribes on reconnect)
        await self.unsubscribe()

        async def enqueue(msg: Msg) -> None:
            self.queue.put_nowait(msg)

        try:
            for subject in self.feed.subjects(self.session_id):
                self.subscriptions.append(await nc.subscribe(subject, cb=enqueue))
            self.nc = nc
        except NatsError:
            await self.unsubscribe()

    async def unsubscribe(self) -> None:
        for sub in self.subscriptions:
            with contextlib.suppress(NatsError, asyncio.CancelledError):
                await sub.unsubscribe()
        self.subscriptions, self.nc = [], None


def _events_after(sessions: SessionService, session_id: UUID, after: int) -> list[SessionEvent]:
    return list(sessions.session_events(session_id, after=after))
