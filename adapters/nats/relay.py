"""The relay: tails the event store's notification log and publishes it to JetStream.

- In order: table-lock inserts make commit order equal notification order, so reading
  "ids after my position" never passes over an event that commits late; holes left
  by rolled-back transactions are simply absent rows.
- Once: the stream refuses a message whose predecessor is not its last message, and
  drops a repeated `Nats-Msg-Id`; after any failure the relay resumes after the
  stream's own last message (startup reconciliation), not after its checkpoint.
- Durable progress: the checkpoint (a tracking row) advances only after the PubAcks,
  at most once a second while events come, and once they stop for a poll interval.
- One active relay per stream: a Postgres advisory lock; the others wait.
- Commands never wait for NATS: while it is away the relay backs off and retries.
"""

from __future__ import annotations

import asyncio
import logging
import time
import zlib

import psycopg
from eventsourcing.persistence import ApplicationRecorder, Tracking, TrackingRecorder
from psycopg import sql

from adapters.nats.connection import Backoff
from adapters.nats.stream import EventStream, StreamUnavailable
from application.bridge import SyncBridge

log = logging.getLogger(__name__)

CHECKPOINT_INTERVAL = 1.0  # seconds between checkpoint writes while busy


class Relay:
    """Publishes every stored event to the stream exactly once, in commit order."""

    def __init__(
        self,
        *,
        database_url: str,
        recorder: ApplicationRecorder,
        checkpoints: TrackingRecorder,
        bridge: SyncBridge,
        stream: EventStream,
        channel: str,
        batch_size: int = 256,
        poll_interval: float = 1.0,
    ) -> None:
        self.database_url = database_url
        self.recorder = recorder
        self.checkpoints = checkpoints
        self.bridge = bridge
        self.stream = stream
        self.channel = channel
        self.batch_size = batch_size
        self.poll_interval = poll_interval
        self.name = f"relay:{stream.name}"
        self.lock_key = zlib.crc32(self.name.encode())
        self.position = 0  # the last notification id known to be on the stream
        self.checkpoint = 0
        self.is_leader = False
        self.published = 0
        self._backoff = Backoff(first=0.05, ceiling=5.0)
        self._checkpointed_at = 0.0

    async def run(self) -> None:
        """Relay until cancelled, surviving Postgres and NATS outages."""
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self.database_url, autocommit=True
                ) as conn:
                    await self._lead(conn)
                    await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
                    await self._reconcile()
                    await self._pump(conn)
            except psycopg.OperationalError as e:
                log.warning("relay lost Postgres (%s); retrying", e)
                await self._backoff.wait()
            finally:
                self.is_leader = False

    async def _lead(self, conn: psycopg.AsyncConnection[tuple[object, ...]]) -> None:
        while True:
            cur = await conn.execute("SELECT pg_try_advisory_lock(%s)", (self.lock_key,))
            row = await cur.fetchone()
            if row is not None and row[0]:
                self.is_leader = True
                log.info("relay %s is active", self.name)
                return
            await asyncio.sleep(self.poll_interval)

    async def _reconcile(self) -> None:
        """Resume after the stream's last message; the stream is what was published."""
        recorded = await self.bridge(self.checkpoints.max_tracking_id, self.name)
        self.checkpoint = recorded or 0
        while True:
            try:
                await self.stream.ensure()
                on_stream = await self.stream.last_notification_id()
                break
            except (TimeoutError, StreamUnavailable, OSError) as e:
                log.warning("relay waiting for NATS (%s)", e)
                await self._backoff.wait()
        if on_stream < self.checkpoint:
            log.warning(
                "stream %s ends at %d but the relay checkpoint is %d: refilling from Postgres",
                self.stream.name, on_stream, self.checkpoint,
            )  # fmt: skip
        self.position = on_stream
        await self._advance_checkpoint()

    async def _pump(self, conn: psycopg.AsyncConnection[tuple[object, ...]]) -> None:
        while True:
            batch = await self.bridge(
                self.recorder.select_notifications, self.position + 1, self.batch_size
            )
            if batch:
                try:
                    self.position = await self.stream.publish(batch, after=self.position)
                except StreamUnavailable as e:
                    log.warning("publish failed (%s); backing off", e)
                    await self._backoff.wait()
                    await self._reconcile()
                    continue
                self.published += len(batch)
                self._backoff.reset()
                if len(batch) == self.batch_size:  # more may be waiting: read on at once
                    await self._checkpoint_if_due()
                    continue
            # Caught up: a short read had every commit before it (the insert's table lock
            # makes commit order id order), and each later commit notifies. A checkpoint
            # per commit would be one more write per event under a steady trickle: write
            # it once a second, or once nothing new has come for a poll interval.
            await self._checkpoint_if_due()
            if not await self._wait_for_commit(conn):
                await self._advance_checkpoint()

    async def _checkpoint_if_due(self) -> None:
        if time.monotonic() - self._checkpointed_at > CHECKPOINT_INTERVAL:
            await self._advance_checkpoint()

    async def _advance_checkpoint(self) -> None:
        # The stream, not the checkpoint, says where to resume; the checkpoint records
        # progress for lag and audit, so under load it is written at most once a second.
        self._checkpointed_at = time.monotonic()
        if self.position > self.checkpoint:
            await self.bridge(self.checkpoints.insert_tracking, Tracking(self.name, self.position))
            self.checkpoint = self.position

    async def _wait_for_commit(self, conn: psycopg.AsyncConnection[tuple[object, ...]]) -> bool:
        """Whether a commit was announced; NOTIFY wakes us at once, and the timeout
        (False) is the polling fallback."""
        notified = False
        async for _ in conn.notifies(timeout=self.poll_interval, stop_after=1):
            notified = True  # the generator ends by itself after one
        return notified
