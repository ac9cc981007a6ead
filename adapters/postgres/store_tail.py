"""The newest stored version of each session this process streams, told by the store.

NATS brings a stream its session's stored events, but a message can be lost on the
way (the relay behind or away, NATS restarting, a client that has not yet noticed
its server died) and a stream cannot tell a lost message from a quiet session. The
store can: every insert notifies the log's channel as it commits (the channel the
relay listens to). One connection per process listens there and, after each burst of
commits (`SETTLE`), reads the (notification id, session, version) of the rows
committed since its last read: one small statement for the whole process, however
many streams are open. A stream that sees a version here which NATS has not brought it soon reads it
from the store (`adapters/nats/session_feed.py`).

Commit order is notification order (the insert holds the table's lock until it
commits), so reading after the last id seen never passes over a late commit.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from uuid import UUID

import psycopg
from psycopg import sql

log = logging.getLogger(__name__)

PAGE = 5000  # rows read per statement while catching up with a burst of commits
SETTLE = 0.05  # seconds a commit waits for others to share its read: at most 20 reads/s


class StoreTail:
    """Heads of the watched sessions' logs, kept from the store's commit notifications."""

    def __init__(self, database_url: str, *, table: str, channel: str, retry: float = 1.0) -> None:
        self.database_url = database_url
        self.channel = channel
        self.retry = retry
        self.live = False  # listening now: a commit is known within a round trip
        self.reads = 0  # statements that read new rows (for tests and metrics)
        self._heads: dict[UUID, int] = {}
        self._watchers: Counter[UUID] = Counter()
        self._position: int | None = None
        self._task: asyncio.Task[None] | None = None
        schema, _, name = table.rpartition(".")
        table_id = sql.Identifier(schema, name) if schema else sql.Identifier(name)
        self._rows = sql.SQL(
            "SELECT notification_id, originator_id, originator_version FROM {} "
            "WHERE notification_id > %s ORDER BY notification_id LIMIT %s"
        ).format(table_id)
        self._last = sql.SQL("SELECT coalesce(max(notification_id), 0) FROM {}").format(table_id)

    def watch(self, session_id: UUID) -> None:
        """A stream of `session_id` opened here: keep its head from now on."""
        self._watchers[session_id] += 1

    def unwatch(self, session_id: UUID) -> None:
        self._watchers[session_id] -= 1
        if self._watchers[session_id] <= 0:
            del self._watchers[session_id]
            self._heads.pop(session_id, None)

    def head(self, session_id: UUID) -> int:
        """The newest version committed since the session was watched (0: none seen)."""
        return self._heads.get(session_id, 0)

    def start(self) -> None:
        self._task = asyncio.create_task(self.run(), name="store tail")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def run(self) -> None:
        """Listen until cancelled, reconnecting after Postgres goes away."""
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self.database_url, autocommit=True
                ) as conn:
                    await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
                    self.live = True
                    await self._read(conn)  # what committed while not listening
                    while True:
                        async for _ in conn.notifies(stop_after=1):
                            pass  # a commit was announced
                        await asyncio.sleep(SETTLE)
                        async for _ in conn.notifies(timeout=0):
                            pass  # and those announced meanwhile: one read for them all
                        await self._read(conn)
            except psycopg.OperationalError as e:
                log.warning("store tail lost Postgres (%s); retrying", e)
            finally:
                self.live = False
            await asyncio.sleep(self.retry)

    async def _read(self, conn: psycopg.AsyncConnection[tuple[object, ...]]) -> None:
        if self._position is None or not self._watchers:
            # Nobody to tell: only where the log ends, so a first stream reads no backlog.
            row = await (await conn.execute(self._last)).fetchone()
            self._position = int(str(row[0])) if row else 0
            return
        while True:
            self.reads += 1
            cursor = await conn.execute(self._rows, (self._position, PAGE))
            rows = await cursor.fetchall()
            for notification_id, originator_id, version in rows:
                self._position = int(str(notification_id))
                session = originator_id if isinstance(originator_id, UUID) else None
                if session is not None and session in self._watchers:
                    self._heads[session] = max(self._heads.get(session, 0), int(str(version)))
            if len(rows) < PAGE:
                return
