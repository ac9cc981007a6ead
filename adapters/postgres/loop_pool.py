"""The process's connections on the event loop: one psycopg `AsyncConnectionPool`.

What the engine sends on every message goes through it rather than through the
store's threads (`SyncBridge`, ~330 us a statement against ~100-150 us on the loop in
isolation: `bench.stack_floor`): the event store's hot path (`AsyncRecorder`), the
accounts log's head. (The rate-limit counts, the budget checks and the
`Idempotency-Key` records cost a `serve` under load more CPU on it than through the
threads: docs/performance.md.) Each statement is its own transaction (autocommit), as
the library's recorder has them.

The pool is opened by the first statement, on the loop that sends it, and grows to
`TOKENDANCE_DB_ASYNC_POOL_SIZE` connections under load. A statement that finds no free
connection within `TOKENDANCE_DB_ASYNC_TIMEOUT` gets `StoreBusy`, with nothing sent: its
caller goes another way (the store's threads) or answers 503 with `Retry-After`, rather
than queueing without end. Other errors are psycopg's; each user says what they mean.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from psycopg import AsyncConnection
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from application.loop_writes import StoreBusy


class LoopPool:
    """Pooled autocommit connections for the loop, opened on first use."""

    def __init__(self, conninfo: str, *, size: int, timeout: float, name: str) -> None:
        self.pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            conninfo,
            min_size=1,  # grows to `size` under load: every role's process has one
            max_size=size,
            timeout=timeout,
            name=name,
            open=False,
            kwargs={"autocommit": True, "row_factory": dict_row, "prepare_threshold": None},
            # No check on checkout (a round trip each): a connection Postgres closed fails
            # its statement, which its user tries again, and the pool replaces it.
        )
        # Opened by the first statement, on the loop that sends it (once: a pool closed
        # at shutdown stays closed).
        self._opening: asyncio.Future[None] | None = None

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[AsyncConnection[DictRow]]:
        """A connection of the pool; `StoreBusy` when none is free within the timeout.
        A closed pool raises psycopg_pool's `PoolClosed`, a database that cannot be
        reached psycopg's `OperationalError`."""
        if self._opening is None or not self._opening.done():
            await self.open()
        try:
            async with self.pool.connection() as conn:
                yield conn
        except PoolTimeout as e:
            raise StoreBusy(f"no database connection free within {self.pool.timeout:g} s") from e

    async def open(self, *, wait: bool = False) -> None:
        """Open the pool (once), on this loop; with `wait`, until its first connection is made."""
        if self._opening is None:
            self._opening = asyncio.ensure_future(self.pool.open(wait=wait))
        await asyncio.shield(self._opening)

    async def close(self) -> None:
        await self.pool.close()
