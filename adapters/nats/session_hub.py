"""One core-NATS subscription per session in this process, shared by all its readers.

The first reader of a session subscribes, the last one to leave unsubscribes. Each
message is parsed once and handed to every reader's inbox: a bounded queue of its
own, so a reader that stops reading holds up no one. A message that can be joined to
the one waiting last in the inbox is (`join`: a streaming turn's text chunks), so a
reader a little behind a fast stream gets fewer, bigger chunks and loses nothing. An
inbox that overflows drops what it holds and says so (`OVERFLOWED` comes next): its
reader then refills what it missed from wherever the truth is kept (the event store);
what exists only on NATS is lost for it.

Subscribing runs in a task of the hub's, awaited by the readers that need it: a
reader that goes away meanwhile cannot leave half a subscription behind, and
readers that ask at once share one attempt.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
from collections import deque
from collections.abc import Callable
from typing import Generic, Literal, TypeVar
from uuid import UUID

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.errors import Error as NatsError

READER_QUEUE = 256  # messages a reader may fall behind before its inbox overflows

T = TypeVar("T")


class Overflowed(enum.Enum):
    """The inbox dropped messages here: what came before this is gone."""

    OVERFLOWED = "overflowed"


OVERFLOWED: Literal[Overflowed.OVERFLOWED] = Overflowed.OVERFLOWED


Join = Callable[[T, T], T | None]
"""Two messages as one, in order (None: they cannot be joined)."""


def never(_first: object, _second: object) -> None:
    return None


class Inbox(Generic[T]):
    """One reader's bounded queue of parsed messages; never blocks the one who puts."""

    def __init__(self, join: Join[T] = never) -> None:
        self._items: deque[T | Overflowed] = deque()
        self._size = READER_QUEUE
        self._join = join
        self._ready = asyncio.Event()
        self.closed = False

    def put(self, item: T) -> None:
        last = self._items[-1] if self._items else None
        if last is not None and not isinstance(last, Overflowed):
            joined = self._join(last, item)
            if joined is not None:
                self._items[-1] = joined
                self._ready.set()
                return
        if len(self._items) >= self._size:
            self._items.clear()
            self._items.append(OVERFLOWED)
        self._items.append(item)
        self._ready.set()

    def close(self) -> None:
        self.closed = True
        self._ready.set()

    async def get(self, timeout: float) -> T | Overflowed | None:
        """The next item; `None` once closed, or after `timeout` seconds without one."""
        if not self._items and not self.closed:
            self._ready.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(timeout):
                    await self._ready.wait()
        if self.closed or not self._items:
            return None
        return self._items.popleft()


class _Channel(Generic[T]):
    """A session's subscription, the client it is on, and the inboxes it feeds."""

    def __init__(self, subject: str, parse: Callable[[Msg], T | None]) -> None:
        self.subject = subject
        self.parse = parse
        self.inboxes: set[Inbox[T]] = set()
        self.sub: Subscription | None = None
        self.nc: NATS | None = None
        self.subscribing: asyncio.Task[None] | None = None
        self.dropped = False  # its last reader left

    async def deliver(self, msg: Msg) -> None:
        item = self.parse(msg)
        if item is not None:
            for inbox in self.inboxes:
                inbox.put(item)


class SessionHub(Generic[T]):
    """Shares one subscription per session among the readers of this process."""

    def __init__(
        self,
        *,
        connection: Callable[[], NATS | None],
        subject: Callable[[UUID], str],
        parse: Callable[[Msg], T | None],
        join: Join[T] = never,
    ) -> None:
        self._connection = connection  # the client, or None while NATS is away
        self._subject = subject
        self._parse = parse
        self._join = join
        self._channels: dict[UUID, _Channel[T]] = {}

    @property
    def subscriptions(self) -> int:
        """How many NATS subscriptions the hub holds (one per session being read)."""
        return sum(1 for c in self._channels.values() if c.sub is not None)

    def join(self, session_id: UUID) -> Inbox[T]:
        """A new reader's inbox; `subscribe` before reading the store, `leave` at the end."""
        channel = self._channels.get(session_id)
        if channel is None:
            channel = self._channels[session_id] = _Channel(self._subject(session_id), self._parse)
        inbox: Inbox[T] = Inbox(self._join)
        channel.inboxes.add(inbox)
        return inbox

    async def leave(self, session_id: UUID, inbox: Inbox[T]) -> None:
        channel = self._channels.get(session_id)
        if channel is None or inbox not in channel.inboxes:
            return
        channel.inboxes.discard(inbox)
        if channel.inboxes:
            return
        del self._channels[session_id]
        channel.dropped = True
        sub, channel.sub, channel.nc = channel.sub, None, None
        if sub is not None:
            await unsubscribe(sub)

    def is_live(self, session_id: UUID) -> bool:
        """Subscribed on the client that is connected now."""
        channel = self._channels.get(session_id)
        nc = self._connection()
        return channel is not None and channel.sub is not None and channel.nc is nc is not None

    async def subscribe(self, session_id: UUID) -> None:
        """Subscribe on the current client unless done already (nothing while NATS is away).

        nats-py subscribes again by itself after a reconnect of the same client; a new
        client (NATS came back as another connection) gets a new subscription.
        """
        channel = self._channels.get(session_id)
        nc = self._connection()
        if channel is None or nc is None or (channel.nc is nc and channel.sub is not None):
            return
        if channel.subscribing is None or channel.subscribing.done():
            channel.subscribing = asyncio.create_task(self._resubscribe(channel, nc))
        await asyncio.shield(channel.subscribing)

    def close(self) -> None:
        """Wake every reader: its inbox is closed (the feed is shutting down)."""
        for channel in self._channels.values():
            for inbox in channel.inboxes:
                inbox.close()

    @staticmethod
    async def _resubscribe(channel: _Channel[T], nc: NATS) -> None:
        old, channel.sub, channel.nc = channel.sub, None, None
        if old is not None:
            await unsubscribe(old)
        try:
            sub = await nc.subscribe(channel.subject, cb=channel.deliver)
        except NatsError:
            return  # NATS went away again: the readers read the store and try later
        if channel.dropped:
            await unsubscribe(sub)
        else:
            channel.sub, channel.nc = sub, nc


async def unsubscribe(sub: Subscription) -> None:
    """Unsubscribe; the client forgets it at once, before telling the server."""
    with contextlib.suppress(NatsError):
        await sub.unsubscribe()
