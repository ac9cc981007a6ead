"""The `Idempotency-Key` records: a row per user and key in Postgres, so every API
process sees it (what the key stands for: `adapters/http/middleware/idempotency.py`).

A claim belongs to a live process (`lease_owner.py`); a released key (its request
failed) stays, marked, so the next claim knows the key was claimed before.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Literal

import psycopg
from eventsourcing.postgres import PostgresDatastore

from adapters.http.middleware.lease_owner import OWNER_GONE, SPACE, Connect, LeaseOwner

EXPIRY = 24 * 3600.0  # seconds a key is remembered
LEASE = 300.0  # seconds after which a claim with no owner (written before owners) is abandoned
SWEEP_EVERY = 600.0  # seconds between deletions of expired keys (per process)

CREATE = (
    """CREATE TABLE IF NOT EXISTS idempotency_keys (
        user_key text NOT NULL,
        key text NOT NULL,
        method text NOT NULL,
        path text NOT NULL,
        request_hash text NOT NULL,
        status integer,           -- NULL while the first request is in progress
        content_type text,
        body bytea,               -- NULL for a streamed answer (replayed from the log)
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (user_key, key)
    )""",
    "CREATE INDEX IF NOT EXISTS idempotency_keys_by_age ON idempotency_keys (created_at)",
    "ALTER TABLE idempotency_keys ADD COLUMN IF NOT EXISTS owner bigint",  # the claiming process
    # Claims of the key so far: above 1, an earlier request under it may have written.
    "ALTER TABLE idempotency_keys ADD COLUMN IF NOT EXISTS claims integer NOT NULL DEFAULT 1",
    # Given back by a request that failed (5xx) or never answered: free to claim again.
    "ALTER TABLE idempotency_keys ADD COLUMN IF NOT EXISTS released boolean NOT NULL DEFAULT false",
)

# Claim a new key, or take over an expired or released one, or one whose claiming
# process is gone; say how many claims the key has had.
CLAIM = f"""
    INSERT INTO idempotency_keys AS k (user_key, key, method, path, request_hash, owner)
    VALUES (%(user)s, %(key)s, %(method)s, %(path)s, %(hash)s, %(owner)s)
    ON CONFLICT (user_key, key) DO UPDATE
       SET method = EXCLUDED.method, path = EXCLUDED.path, request_hash = EXCLUDED.request_hash,
           status = NULL, content_type = NULL, body = NULL, created_at = now(),
           owner = EXCLUDED.owner, claims = k.claims + 1, released = false
     WHERE k.created_at < now() - make_interval(secs => %(expiry)s)
        OR (k.status IS NULL AND k.released)
        OR (k.status IS NULL AND k.owner IS NULL
            AND k.created_at < now() - make_interval(secs => %(lease)s))
        OR (k.status IS NULL AND k.owner IS NOT NULL AND {OWNER_GONE})
    RETURNING claims
"""


@dataclass(frozen=True)
class Stored:
    """The first answer under a key (`body` None: it was a stream)."""

    status: int
    content_type: str
    body: bytes | None


# "new": claimed for the first time; "claimed": claimed again (an earlier request under
# the key failed or expired, and may have written before it did).
Claim = Literal["new", "claimed", "in_progress", "reused"] | Stored
NEW = "new"


class IdempotencyStore:
    """The keys, in a Postgres table next to the event store."""

    def __init__(self, datastore: PostgresDatastore) -> None:
        self.datastore = datastore
        self.owner = LeaseOwner(_connector(datastore))
        self._next_sweep = 0.0

    def close(self) -> None:
        """Let go of this process's leases (a process that dies lets go by itself)."""
        self.owner.close()

    def create_table(self) -> None:
        with self.datastore.transaction(commit=True) as curs:
            for statement in CREATE:
                curs.execute(statement)

    def claim(self, user: str, key: str, method: str, path: str, request_hash: str) -> Claim:
        """Claim the key for this request, or what the key already stands for."""
        params = {
            "user": user,
            "key": key,
            "method": method,
            "path": path,
            "hash": request_hash,
            "expiry": EXPIRY,
            "lease": LEASE,
            "owner": self.owner.ensure(),
            "space": SPACE,
        }
        self._sweep()
        for _ in range(3):  # the holder may give the key back between our two statements
            with self.datastore.get_connection() as conn:
                claimed = conn.execute(CLAIM, params).fetchone()
                if claimed is not None:
                    return "new" if claimed["claims"] == 1 else "claimed"
                row = conn.execute(
                    "SELECT request_hash, status, content_type, body FROM idempotency_keys "
                    "WHERE user_key = %s AND key = %s",
                    (user, key),
                ).fetchone()
            if row is None:
                continue
            if row["request_hash"] != request_hash:
                return "reused"
            if row["status"] is None:
                return "in_progress"
            body = row["body"]
            return Stored(row["status"], row["content_type"] or "", bytes(body) if body else body)
        return "in_progress"

    def complete(self, user: str, key: str, answer: Stored) -> None:
        with self.datastore.get_connection() as conn:
            conn.execute(
                "UPDATE idempotency_keys SET status = %s, content_type = %s, body = %s "
                "WHERE user_key = %s AND key = %s",
                (answer.status, answer.content_type, answer.body, user, key),
            )

    def release(self, user: str, key: str) -> None:
        """Give the key back (its request failed): the next request under it runs."""
        with self.datastore.get_connection() as conn:
            conn.execute(
                "UPDATE idempotency_keys SET released = true, owner = NULL "
                "WHERE user_key = %s AND key = %s AND status IS NULL",
                (user, key),
            )

    def _sweep(self) -> None:
        now = time.monotonic()
        if now < self._next_sweep:
            return
        self._next_sweep = now + SWEEP_EVERY
        with self.datastore.get_connection() as conn:
            conn.execute(
                "DELETE FROM idempotency_keys WHERE created_at < now() - make_interval(secs => %s)",
                (EXPIRY,),
            )


def _connector(datastore: PostgresDatastore) -> Connect:
    """Opens a connection of its own (outside the pool) with the datastore's parameters."""
    kwargs = datastore.pool.kwargs
    assert isinstance(kwargs, dict)
    params = {k: v for k, v in kwargs.items() if k != "row_factory"}

    def connect() -> psycopg.Connection[tuple[Any, ...]]:
        return psycopg.Connection.connect(**params)

    return connect
