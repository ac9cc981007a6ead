"""The event store's hot path on the event loop: psycopg's `AsyncConnectionPool`.

eventsourcing's recorders are synchronous (pyeventsourcing/eventsourcing#233): a call
from the loop goes through a thread (`SyncBridge`), ~330 us a statement against
~100-150 us on the loop (`bench.stack_floor`). This recorder sends the same statements
as `LockedInsertRecorder` to the same tables: an insert is the one call of its function
(the table lock, the NOTIFY, the hash chain, the rows, in one transaction), a read the
library's select. So the rows are byte for byte those the library's recorder writes,
each reads the other's, and the library keeps serving what is off the hot path
(rebuild, replay, the relay's pages).

Its connections are the process's `LoopPool` (adapters/postgres/loop_pool.py). Errors
are the library's, so the code above judges them as before: a version already taken is
its `IntegrityError` (a `Conflict` to the session), a database that does not answer its
`OperationalError`, retried as the library retries it. A pool with no free connection
is `StoreBusy`, with nothing sent: the caller goes another way
(`application/loop_writes.py`: the store's threads) or answers 503 with `Retry-After`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import TypeVar
from uuid import UUID

import psycopg
import psycopg_pool
from eventsourcing.persistence import (
    IntegrityError,
    InterfaceError,
    Notification,
    OperationalError,
    StoredEvent,
)
from psycopg import AsyncConnection
from psycopg.rows import DictRow
from psycopg.sql import SQL, Identifier

from adapters.postgres.loop_pool import LoopPool
from adapters.postgres.recorder import LockedInsertRecorder

log = logging.getLogger(__name__)

T = TypeVar("T")

ATTEMPTS = 10  # as the library's recorder: ten tries, 0.2 s apart, on a lost connection
WAIT = 0.2


class AsyncRecorder:
    """`insert_events`, `select_events`, `select_notifications` and `max_notification_id`
    of the application recorder `recorder`, awaited on the loop."""

    def __init__(self, pool: LoopPool, recorder: LockedInsertRecorder) -> None:
        self.pool = pool
        self.recorder = recorder
        self._insert = recorder.insert_statement_bytes()
        self._selects: dict[tuple[bool, bool, bool, bool], bytes] = {}
        table = SQL("{schema}.{table}").format(
            schema=Identifier(recorder.datastore.schema),
            table=Identifier(recorder.events_table_name),
        )
        self._max_id = SQL("SELECT MAX(notification_id) AS max FROM {}").format(table).as_bytes()
        self._notifications = SQL(
            "SELECT * FROM {} WHERE notification_id > %s AND notification_id <= %s"
            " ORDER BY notification_id LIMIT %s"
        ).format(table).as_bytes()  # fmt: skip

    async def insert_events(self, stored_events: Sequence[StoredEvent]) -> list[int]:
        """Store the events in one transaction; their notification ids, in order."""
        if not stored_events:
            return []
        columns = self.recorder.insert_columns(stored_events)

        async def insert(conn: AsyncConnection[DictRow]) -> list[int]:
            cursor = await conn.execute(self._insert, columns, prepare=True)
            return sorted(int(r["id"]) for r in await cursor.fetchall())

        return await self._run(insert)

    async def select_events(
        self,
        originator_id: UUID,
        *,
        gt: int | None = None,
        lte: int | None = None,
        desc: bool = False,
        limit: int | None = None,
    ) -> list[StoredEvent]:
        """One aggregate's stored events, as the library's `select_events` gives them."""
        params = [originator_id, *(v for v in (gt, lte, limit) if v is not None)]
        shape = (gt is not None, lte is not None, desc, limit is not None)
        statement = self._selects.get(shape)
        if statement is None:
            statement = self._selects[shape] = self.recorder.select_statement(*shape).as_bytes()

        async def select(conn: AsyncConnection[DictRow]) -> list[StoredEvent]:
            cursor = await conn.execute(statement, params, prepare=True, binary=True)
            return [
                StoredEvent(
                    r["originator_id"], r["originator_version"], r["topic"], bytes(r["state"])
                )
                for r in await cursor.fetchall()
            ]

        return await self._run(select)

    async def select_notifications(
        self, after: int, limit: int, stop: int | None = None
    ) -> list[Notification]:
        """At most `limit` events with notification ids above `after` (and at most `stop`)."""

        async def select(conn: AsyncConnection[DictRow]) -> list[Notification]:
            last = stop if stop is not None else 2**63 - 1
            cursor = await conn.execute(
                self._notifications, (after, last, limit), prepare=True, binary=True
            )
            return [
                Notification(
                    id=r["notification_id"],
                    originator_id=r["originator_id"],
                    originator_version=r["originator_version"],
                    topic=r["topic"],
                    state=bytes(r["state"]),
                )
                for r in await cursor.fetchall()
            ]

        return await self._run(select)

    async def max_notification_id(self) -> int | None:
        async def select(conn: AsyncConnection[DictRow]) -> int | None:
            row = await (await conn.execute(self._max_id)).fetchone()
            return None if row is None or row["max"] is None else int(row["max"])

        return await self._run(select)

    async def _run(self, statement: Callable[[AsyncConnection[DictRow]], Awaitable[T]]) -> T:
        """`statement` on a pooled connection, with the library's errors and retries."""
        for attempt in range(1, ATTEMPTS + 1):
            try:
                async with self._connection() as conn:
                    return await statement(conn)
            except (OperationalError, InterfaceError) as e:
                if attempt == ATTEMPTS:
                    raise
                log.debug("event store: %s; trying again (%d of %d)", e, attempt, ATTEMPTS)
                await asyncio.sleep(WAIT)
        raise AssertionError("unreachable")

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[AsyncConnection[DictRow]]:
        """A connection of the pool, psycopg's errors raised as the library's."""
        try:
            async with self.pool.connection() as conn:
                yield conn
        except psycopg.IntegrityError as e:
            raise IntegrityError(str(e)) from e
        except psycopg.InterfaceError as e:
            raise InterfaceError(str(e)) from e
        except psycopg_pool.PoolClosed as e:  # shutting down
            raise OperationalError(str(e)) from e
        except psycopg.OperationalError as e:  # lost, or the pool could not connect
            raise OperationalError(str(e)) from e
