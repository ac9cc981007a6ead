"""Postgres advisory locks by name, all held on one connection of this process.

Two uses: which live worker drives a session's run (`run:<session>`), and which process
is the active one for a job, such as a view's projection (`lead:<job>`). A process
that dies (SIGKILL included) frees its locks the moment its connection closes, so
another process may take over at once and never runs beside a live holder. Losing
the connection loses every lock; `alive()` says whether they are still held.
"""

from __future__ import annotations

import asyncio
import contextlib
from uuid import UUID

import psycopg

KEY = "hashtextextended('tokendance:' || %s, 0)"


class AdvisoryLocks:
    """Session-level advisory locks, taken and let go by name."""

    def __init__(self, database_url: str) -> None:
        self.database_url = database_url
        self._conn: psycopg.AsyncConnection[tuple[object, ...]] | None = None
        self._lock = asyncio.Lock()
        self.generation = 0  # counts connections: a new one holds none of the old locks

    async def try_lock(self, name: str) -> bool:
        """Take the lock `name` unless another process holds it (reentrant here)."""
        return await self._ask(f"SELECT pg_try_advisory_lock({KEY})", name)

    async def unlock(self, name: str) -> None:
        with contextlib.suppress(psycopg.OperationalError):  # gone, and its locks with it
            await self._ask(f"SELECT pg_advisory_unlock({KEY})", name)

    async def held_elsewhere(self, name: str) -> bool:
        """Whether another process holds `name` right now."""
        if not await self.try_lock(name):
            return True
        await self.unlock(name)
        return False

    async def alive(self) -> bool:
        """Whether the connection holding the locks is still there."""
        try:
            await self._ask("SELECT %s::text IS NOT NULL", "")
        except psycopg.OperationalError:
            return False
        return True

    async def _ask(self, query: str, name: str) -> bool:
        async with self._lock:
            if self._conn is None or self._conn.closed:
                self._conn = await psycopg.AsyncConnection.connect(
                    self.database_url, autocommit=True
                )
                self.generation += 1
            try:
                cur = await self._conn.execute(query, (name,))
            except psycopg.OperationalError:
                await self._conn.close()  # the locks went with it; the next ask reconnects
                raise
            row = await cur.fetchone()
        return bool(row and row[0])

    async def close(self) -> None:
        if self._conn is not None:
            await self._conn.close()
            self._conn = None


class SessionRunLocks:
    """`RunLocks` on advisory locks: the run lock of a session is `run:<session id>`."""

    def __init__(self, locks: AdvisoryLocks) -> None:
        self.locks = locks

    async def try_lock(self, session_id: UUID) -> bool:
        return await self.locks.try_lock(f"run:{session_id}")

    async def unlock(self, session_id: UUID) -> None:
        await self.locks.unlock(f"run:{session_id}")

    async def held_elsewhere(self, session_id: UUID) -> bool:
        return await self.locks.held_elsewhere(f"run:{session_id}")

    async def close(self) -> None:
        await self.locks.close()
