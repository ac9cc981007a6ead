"""The JetStream stream that carries stored events: one message per stored event, on a
subject per session, in the format of `schemas.nats` (the stored state as the body, the
envelope in the headers)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from uuid import UUID

import msgspec
from eventsourcing.persistence import Notification
from nats.aio.client import Client as NATS
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    DeliverPolicy,
    Header,
    PubAck,
    StorageType,
    StreamConfig,
)
from nats.js.errors import APIError, NotFoundError

from schemas.nats import StoredEventHeaders, Subjects

MAX_IN_FLIGHT = 1024


class StreamUnavailable(Exception):
    """NATS or the stream did not answer, or refused a publish; try again later."""


class BadMessage(Exception):
    """A message on the stream is not a stored event in our format."""


class EventStream:
    """A JetStream stream of stored events, `name` on subjects `<name>.events.<session>`,
    on the connection `connection()` gives (`StreamUnavailable` while there is none)."""

    def __init__(
        self, connection: Callable[[], NATS | None], name: str, *, ack_timeout: float = 5.0
    ) -> None:
        self._connection = connection
        self._js: tuple[NATS, JetStreamContext] | None = None
        self.name = name
        self.subjects = Subjects(name)
        self.ack_timeout = ack_timeout

    @property
    def js(self) -> JetStreamContext:
        """The JetStream context of the current connection (one per client: it holds the
        futures of the publishes awaiting their acks)."""
        nc = self._connection()
        if nc is None:
            raise StreamUnavailable("NATS is not connected")
        if self._js is None or self._js[0] is not nc:
            self._js = (nc, nc.jetstream())
        return self._js[1]

    def subject(self, session_id: UUID | str) -> str:
        return self.subjects.events(session_id)

    @property
    def all_subjects(self) -> str:
        return self.subjects.all_events

    async def ensure(self) -> None:
        config = StreamConfig(
            name=self.name,
            subjects=[self.all_subjects],
            storage=StorageType.FILE,
            duplicate_window=120.0,
        )
        try:
            await self.js.stream_info(self.name)
        except NotFoundError:
            await self.js.add_stream(config)

    async def last_notification_id(self) -> int:
        """The notification id of the newest message on the stream (0 if empty)."""
        try:
            info = await self.js.stream_info(self.name)
            if not info.state.messages:
                return 0
            return await self._notification_id_at(info.state.last_seq)
        except (TimeoutError, NatsError) as e:
            raise StreamUnavailable(str(e) or type(e).__name__) from e

    async def sequence_after(self, notification_id: int) -> int:
        """The stream sequence of the first event after `notification_id` (binary search)."""
        info = await self.js.stream_info(self.name)
        low, high = info.state.first_seq, info.state.last_seq
        if not info.state.messages:
            return high + 1
        while low <= high:
            middle = (low + high) // 2
            if await self._notification_id_at(middle) > notification_id:
                high = middle - 1
            else:
                low = middle + 1
        return low

    async def _notification_id_at(self, seq: int) -> int:
        msg = await self.js.get_msg(self.name, seq)
        return int((msg.headers or {}).get(Header.MSG_ID, "0"))

    async def publish(self, notifications: Sequence[Notification], after: int) -> int:
        """Publish in order, pipelined; return the last notification id acknowledged.

        Each message names its predecessor (`Nats-Expected-Last-Msg-Id`), so the
        stream refuses anything that would land out of order or twice; on any refusal
        or timeout this raises and the caller reconciles with the stream's last message.
        """
        futures: list[asyncio.Future[PubAck]] = []
        previous = after
        try:
            for n in notifications:
                originator = n.originator_id
                originator = originator if isinstance(originator, UUID) else UUID(originator)
                envelope = StoredEventHeaders(n.id, n.topic, originator, n.originator_version)
                headers = envelope.headers(previous)
                futures.append(
                    await self.js.publish_async(
                        self.subject(n.originator_id), n.state, headers=headers
                    )
                )
                previous = n.id
            await asyncio.wait_for(asyncio.gather(*futures), self.ack_timeout)
        except (TimeoutError, NatsError, APIError) as e:
            for f in futures:
                f.cancel()
            raise StreamUnavailable(str(e) or type(e).__name__) from e
        return previous

    async def forget_consumers(self, durables: Sequence[str]) -> None:
        """Delete these durable consumers of the stream, those that exist."""
        for durable in durables:
            with contextlib.suppress(NotFoundError):
                await self.js.delete_consumer(self.name, durable)

    async def consume(self, durable: str, *, start_seq: int) -> JetStreamContext.PushSubscription:
        """A durable push consumer from `start_seq`; acking a message acks those before it.

        Pushed, so a message reaches its reader as soon as it is stored (no pull round
        trips). Made anew at the position its reader asks for, so a message a previous
        reader took and never acked cannot come back late, after newer ones. At most
        `max_ack_pending` are in flight, far below the client's pending limits.
        """
        with contextlib.suppress(NotFoundError):
            await self.js.delete_consumer(self.name, durable)
        return await self.js.subscribe(
            self.all_subjects,
            durable=durable,
            stream=self.name,
            manual_ack=True,
            config=ConsumerConfig(
                ack_policy=AckPolicy.ALL,
                deliver_policy=DeliverPolicy.BY_START_SEQUENCE,
                opt_start_seq=start_seq,
                ack_wait=60.0,
                max_ack_pending=MAX_IN_FLIGHT,
                flow_control=True,
                idle_heartbeat=5.0,
            ),
        )


def to_notification(msg: Msg) -> Notification:
    """The stored event a message carries, with its notification id."""
    try:
        envelope = StoredEventHeaders.of(msg.headers or {})
    except msgspec.ValidationError as e:
        raise BadMessage(f"message on {msg.subject}: {e}") from e
    return Notification(
        id=envelope.notification_id,
        originator_id=envelope.originator_id,
        originator_version=envelope.originator_version,
        topic=envelope.topic,
        state=msg.data,
    )
