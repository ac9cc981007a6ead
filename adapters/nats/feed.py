"""The event feed of a projection: a durable JetStream push consumer."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence

from eventsourcing.persistence import Notification
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.js import JetStreamContext

from adapters.nats.connection import Backoff
from adapters.nats.stream import BadMessage, EventStream, StreamUnavailable, to_notification
from application.ports import FeedError

log = logging.getLogger(__name__)


class JetStreamBatch:
    """Messages fetched together; acked after the view committed them."""

    def __init__(self, msgs: Sequence[Msg], notifications: Sequence[Notification]) -> None:
        self._msgs = msgs
        self._notifications = notifications

    @property
    def notifications(self) -> Sequence[Notification]:
        return self._notifications

    async def ack(self) -> None:
        if self._msgs:
            await self._msgs[-1].ack()  # the consumer acks all before it too


class JetStreamFeed:
    """Stored events from the stream, in stream order, for the consumer `durable`."""

    def __init__(
        self, stream: EventStream, durable: str, *, batch_size: int = 256, wait: float = 1.0
    ) -> None:
        self.stream = stream
        self.durable = durable
        self.batch_size = batch_size
        self.wait = wait

    async def batches(self, after: int) -> AsyncIterator[JetStreamBatch]:
        """Batches of events after notification id `after`.

        The caller applies each batch before asking for the next, so the last id
        handed out is where a new subscription (after a NATS outage) starts again.
        """
        backoff = Backoff(first=0.05, ceiling=2.0)
        subscription: JetStreamContext.PushSubscription | None = None
        last_seq = 0
        while True:
            try:
                if subscription is None:
                    start = await self.stream.sequence_after(after)
                    subscription = await self.stream.consume(self.durable, start_seq=start)
                    last_seq = start - 1
                msgs = await self._fetch(subscription)
            except TimeoutError:
                # Nothing new (nats-py raises both its own and asyncio's timeout; both
                # are TimeoutError). The subscription outlives reconnects, so keep it.
                continue
            except (NatsError, OSError, StreamUnavailable) as e:
                log.warning("feed %s waiting for NATS (%s)", self.durable, e or type(e).__name__)
                subscription = None
                await backoff.wait()
                continue
            backoff.reset()
            in_order, last_seq = await self._in_order(msgs, last_seq)
            fresh = [n for n in map(self._decode, in_order) if n.id > after]
            if fresh:
                yield JetStreamBatch(in_order, fresh)
                after = fresh[-1].id
            else:
                await JetStreamBatch(in_order, ()).ack()

    async def _fetch(self, subscription: JetStreamContext.PushSubscription) -> list[Msg]:
        """The next message (waiting for it), and whatever has arrived behind it."""
        msgs = [await subscription.next_msg(timeout=self.wait)]
        while subscription.pending_msgs and len(msgs) < self.batch_size:
            msgs.append(await subscription.next_msg(timeout=self.wait))
        return msgs

    async def _in_order(self, msgs: Sequence[Msg], last_seq: int) -> tuple[list[Msg], int]:
        """The messages up to the first gap in stream sequence; those after come again."""
        kept: list[Msg] = []
        for i, msg in enumerate(msgs):
            seq = msg.metadata.sequence.stream
            if seq > last_seq + 1:
                log.warning(
                    "feed %s: sequence %d after %d; asking again", self.durable, seq, last_seq
                )
                for later in msgs[i:]:
                    await later.nak(delay=0.05)
                break
            last_seq = max(last_seq, seq)
            kept.append(msg)
        return kept, last_seq

    def _decode(self, msg: Msg) -> Notification:
        try:
            return to_notification(msg)
        except BadMessage as e:
            raise FeedError(f"stream sequence {msg.metadata.sequence.stream}", str(e)) from e
