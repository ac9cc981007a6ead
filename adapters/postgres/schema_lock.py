"""One process at a time creates tables: Postgres refuses concurrent `CREATE ... IF NOT EXISTS`
of the same table ("tuple concurrently updated") when several roles start at once."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg

KEY = "SELECT pg_advisory_lock(hashtextextended('tokendance:schema', 0))"


@contextmanager
def schema_lock(database_url: str) -> Iterator[None]:
    """Hold the schema lock (waiting for another process's) while the block runs."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(KEY)
        yield  # the lock goes with the connection, also if the block fails
