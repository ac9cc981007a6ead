"""The rate-limit counters' statements of every request, sent on the event loop.

`PostgresCounters` (adapters/postgres/limit_counters.py) counts through the datastore's
pool, so the middleware calls it through the store's threads. Every request counts once
and every stream gives its slot back: these are sent here on the loop's connections
(`LoopPool`) instead, the same statements with the same parameters, judged by the same
code. A database error is `CountersUnavailable` (the limits fail open, as before); a
pool with no free connection is `StoreBusy` and tables not made yet `NeedsThread`: the
middleware then counts through the threads, as before.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.rows import DictRow

from adapters.http.middleware.limit_counters import CountersUnavailable, Over, StreamAdmission
from adapters.postgres.limit_counters import ADMIT, CLOSE, HIT, SWEEP, PostgresCounters
from adapters.postgres.loop_pool import LoopPool
from application.loop_writes import NeedsThread


class PostgresLoopCounters:
    """`hit`, `admit_stream` and `close_stream` of `counters`, awaited on the loop."""

    def __init__(self, counters: PostgresCounters, pool: LoopPool) -> None:
        self.counters = counters
        self.pool = pool

    async def hit(self, key: str, *, requests: int, uploads: int | None) -> Over | None:
        now, params = self.counters.hit_params(key, requests, uploads)
        row = await self._row(HIT, params)
        return self.counters.hit_outcome(row, now, requests, uploads)

    async def admit_stream(self, key: str, *, requests: int, streams: int) -> StreamAdmission:
        now, params = self.counters.admit_params(key, requests, streams)
        row = await self._row(ADMIT, params)
        return self.counters.admit_outcome(row, now, requests)

    async def close_stream(self, slot: str) -> None:
        await self._row(CLOSE, (slot,), returns=False)

    async def _row(self, statement: str, params: Any, *, returns: bool = True) -> DictRow:
        if not self.counters.ready:
            raise NeedsThread("the counters' tables are made on first use, by a thread")
        try:
            async with self.pool.connection() as conn:
                if self.counters.sweep_due():
                    await conn.execute(SWEEP, self.counters.sweep_params())
                cursor = await conn.execute(statement, params, prepare=True)
                row = await cursor.fetchone() if returns else {}
        except psycopg.Error as e:  # the pool closed or the database unreachable too
            raise CountersUnavailable(str(e)) from e
        assert row is not None
        return row
