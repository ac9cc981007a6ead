"""One session's events for a reader: the stored ones after a version, then the live tail.

The reader subscribes first (core NATS: the relay's JetStream publishes and the live
deltas), then catches up from the event store, then forwards what arrives, skipping
versions it already sent and refilling from the store when it sees a gap. So a
client resuming from `Last-Event-ID` gets every stored event after it exactly once,
also across a server restart (the ids are session versions, kept in Postgres).
Without NATS the reader polls the store, and live deltas are simply not there.
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

POLL_WITHOUT_NATS = 1.0  # seconds between store reads when NATS is away


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

    async def read(
        self, session_id: UUID, after: int, *, idle: float = 15.0
    ) -> AsyncIterator[FeedItem]:
        queue: asyncio.Queue[Msg] = asyncio.Queue()
        subscriptions = await self._subscribe(session_id, queue)
        try:
            last = after
            async for item in self._catch_up(session_id, last):
                last = item.version
                yield item
            while True:
                try:
                    msg = await asyncio.wait_for(queue.get(), self._wait(subscriptions, idle))
                except TimeoutError:
                    if not subscriptions:  # no NATS: poll the store instead
                        caught = 0
                        async for item in self._catch_up(session_id, last):
                            last, caught = item.version, caught + 1
                            yield item
                        if not caught:
                            yield Idle()
                        subscriptions = await self._subscribe(session_id, queue)
                    else:
                        yield Idle()
                    continue
                async for handled in self._handle(session_id, msg, last):
                    if isinstance(handled, Stored):
                        last = handled.version
                    yield handled
        finally:
            for sub in subscriptions:
                with contextlib.suppress(NatsError, asyncio.CancelledError):
                    await sub.unsubscribe()

    async def _handle(self, session_id: UUID, msg: Msg, last: int) -> AsyncIterator[FeedItem]:
        if msg.subject.startswith(f"{self.stream.lower()}.live."):
            delta = msgspec.json.decode(msg.data, type=_LiveDelta)
            if delta.type == "thinking_delta":
                yield Live(ThinkingDelta(delta.text))
            else:
                yield Live(TextDelta(delta.text))
            return
        try:
            notification = to_notification(msg)
        except BadMessage:
            return
        version = notification.originator_version
        if version <= last:
            return  # already sent (caught up from the store)
        if version > last + 1:  # a message went missing: the store has it
            async for item in self._catch_up(session_id, last):
                yield item
            return
        yield Stored(as_session_event(self.sessions.mapper.to_domain_event(notification)))

    async def _catch_up(self, session_id: UUID, after: int) -> AsyncIterator[Stored]:
        events = await self.bridge(_events_after, self.sessions, session_id, after)
        for e in events:
            yield Stored(e)

    async def _subscribe(self, session_id: UUID, queue: asyncio.Queue[Msg]) -> list[Subscription]:
        nc = self._connection()
        if nc is None or not nc.is_connected:
            return []

        async def enqueue(msg: Msg) -> None:
            queue.put_nowait(msg)

        try:
            return [
                await nc.subscribe(f"{self.stream.lower()}.events.{session_id}", cb=enqueue),
                await nc.subscribe(live_subject(self.stream, session_id), cb=enqueue),
            ]
        except NatsError:
            return []

    @staticmethod
    def _wait(subscriptions: list[Subscription], idle: float) -> float:
        return idle if subscriptions else min(idle, POLL_WITHOUT_NATS)


def _events_after(sessions: SessionService, session_id: UUID, after: int) -> list[SessionEvent]:
    return list(sessions.session_events(session_id, after=after))
