"""Who holds an `Idempotency-Key` lease: a live process, seen by Postgres itself.

Each API process takes a session-level advisory lock `(SPACE, owner)` on a connection
of its own, held for as long as the process lives, and writes `owner` on every lease it
claims. When the process dies (SIGKILL included), its connection ends and Postgres drops
the lock at once, so any other process sees the lease as abandoned (`OWNER_GONE`) and
may take it over: a retry after a restart never waits on a dead process.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

import psycopg

SPACE = 0x7D1D  # first key of the two-int advisory lock: "an idempotency lease owner"
CHECK_EVERY = 5.0  # seconds between checks that the owning connection is still up

# True when the lease's owner (a column `owner` of the row `k`) holds no lock any more.
OWNER_GONE = """NOT EXISTS (
    SELECT 1 FROM pg_locks l
     WHERE l.locktype = 'advisory' AND l.objsubid = 2 AND l.granted
       AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
       AND l.classid::bigint = %(space)s AND l.objid::bigint = k.owner)"""

Connect = Callable[[], psycopg.Connection[tuple[Any, ...]]]


class LeaseOwner:
    """This process as a lease owner: an id and the connection that holds its lock."""

    def __init__(self, connect: Connect) -> None:
        self._connect = connect
        self._conn: psycopg.Connection[tuple[Any, ...]] | None = None
        self._id = 0
        self._checked = 0.0
        self._lock = threading.Lock()

    def ensure(self) -> int:
        """The owner id, with its lock held (taken again if the connection was lost)."""
        with self._lock:
            if self._conn is not None and not self._alive(self._conn):
                self._conn.close()
                self._conn = None
            if self._conn is None:
                self._conn = self._connect()
                self._conn.autocommit = True
                self._id = self._lock_an_id(self._conn, self._id)
                self._checked = time.monotonic()
            return self._id

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _alive(self, conn: psycopg.Connection[tuple[Any, ...]]) -> bool:
        if conn.closed or conn.broken:
            return False
        if time.monotonic() - self._checked < CHECK_EVERY:
            return True
        try:
            conn.execute("SELECT 1")
        except psycopg.Error:
            return False
        self._checked = time.monotonic()
        return True

    @staticmethod
    def _lock_an_id(conn: psycopg.Connection[tuple[Any, ...]], wanted: int) -> int:
        """Lock `wanted` again (after a reconnection), or a new random id."""
        owner = wanted or secrets.randbelow(2**31 - 1) + 1
        while True:
            row = conn.execute("SELECT pg_try_advisory_lock(%s, %s)", (SPACE, owner)).fetchone()
            if row is not None and row[0]:
                return owner
            owner = secrets.randbelow(2**31 - 1) + 1  # taken: ids are random, pick another
