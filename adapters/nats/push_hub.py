"""The stored events of every session, for this process's push sockets: one subscription.

A WebSocket follows many sessions at once (up to hundreds); one NATS subscription per
session and socket would not do, nor one per session per socket. The hub holds one
core-NATS subscription for the whole process, on `<stream>.events.*` (what the relay
publishes to JetStream), made when the first socket follows a session and kept while
any does. A message of a session no socket follows is dropped by its subject alone,
undecoded; one that some socket follows is decoded once and put in each follower's
inbox (bounded, `session_hub.Inbox`: a socket that stops reading holds up no one and
refills what it missed from the store).

Like the SSE streams, the followers treat NATS as a shortcut: the store is the truth.
While NATS is away (`is_live()` false) a follower reads the store itself, and calls
`subscribe()` again, which subscribes on the client NATS came back as.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Generic, TypeVar
from uuid import UUID

from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.errors import Error as NatsError

from adapters.nats.session_hub import Inbox, unsubscribe
from schemas.nats import Subjects

T = TypeVar("T")


class PushHub(Generic[T]):
    """One subscription to every session's stored events, shared by the push sockets."""

    def __init__(
        self,
        *,
        connection: Callable[[], NATS | None],
        stream: str,
        parse: Callable[[Msg], T | None],
    ) -> None:
        self._connection = connection  # the client, or None while NATS is away
        self._subjects = Subjects(stream)
        self._parse = parse
        self._followers: dict[UUID, set[Inbox[T]]] = {}
        self._inboxes: set[Inbox[T]] = set()  # every open socket's, following or not
        self._sub: Subscription | None = None
        self._nc: NATS | None = None
        self._subscribing: asyncio.Task[None] | None = None
        self.closed = False

    @property
    def subscriptions(self) -> int:
        """The NATS subscriptions the hub holds: one, or none while nobody follows anything."""
        return int(self._sub is not None)

    def attach(self, inbox: Inbox[T]) -> None:
        """A socket's inbox, closed with the hub (`detach` it when the socket ends)."""
        self._inboxes.add(inbox)
        if self.closed:
            inbox.close()

    def detach(self, inbox: Inbox[T]) -> None:
        self._inboxes.discard(inbox)

    def follow(self, session_id: UUID, inbox: Inbox[T]) -> None:
        """Put the session's stored events in `inbox` from now on (`subscribe` next)."""
        self._followers.setdefault(session_id, set()).add(inbox)

    async def unfollow(self, session_id: UUID, inbox: Inbox[T]) -> None:
        inboxes = self._followers.get(session_id)
        if inboxes is None:
            return
        inboxes.discard(inbox)
        if not inboxes:
            del self._followers[session_id]
        if not self._followers and self._sub is not None:
            sub, self._sub, self._nc = self._sub, None, None
            await unsubscribe(sub)

    def is_live(self) -> bool:
        """Subscribed on the client that is connected now."""
        nc = self._connection()
        return self._sub is not None and self._nc is nc is not None

    async def subscribe(self) -> None:
        """Subscribe on the current client unless done (nothing while NATS is away)."""
        nc = self._connection()
        if nc is None or not self._followers or (self._nc is nc and self._sub is not None):
            return
        if self._subscribing is None or self._subscribing.done():
            self._subscribing = asyncio.create_task(self._resubscribe(nc))
        await asyncio.shield(self._subscribing)

    def close(self) -> None:
        """Wake every socket: its inbox is closed (shutting down)."""
        self.closed = True
        for inbox in self._inboxes:
            inbox.close()

    async def _resubscribe(self, nc: NATS) -> None:
        old, self._sub, self._nc = self._sub, None, None
        if old is not None:
            await unsubscribe(old)
        try:
            sub = await nc.subscribe(self._subjects.events("*"), cb=self._deliver)
        except NatsError:
            return  # NATS went away again: the followers read the store and try later
        if self._followers:
            self._sub, self._nc = sub, nc
        else:
            await unsubscribe(sub)

    async def _deliver(self, msg: Msg) -> None:
        try:
            session_id = UUID(msg.subject.removeprefix(self._subjects.events("")))
        except ValueError:
            return
        inboxes = self._followers.get(session_id)
        if not inboxes:
            return  # nobody here follows it: not even decoded
        item = self._parse(msg)
        if item is not None:
            for inbox in inboxes:
                inbox.put(item)
