"""How often each API key is used, and when last: counted in memory, written in batches.

Counting in the request would add a statement to every call a service makes with its
key; here a call adds one to an in-memory tally, and `flush` (every few seconds, from
the app's lifespan) adds the tallies to a Postgres row per key, so every replica's
counts add up. A crash loses at most the tallies since the last flush.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from datetime import UTC, datetime
from uuid import UUID

from eventsourcing.postgres import PostgresDatastore

from projections.account_queries import ApiKeyUse

CREATE = """CREATE TABLE IF NOT EXISTS api_key_uses (
    api_key_id uuid PRIMARY KEY,
    uses bigint NOT NULL,
    last_used_at timestamptz NOT NULL
)"""
ADD = """INSERT INTO api_key_uses VALUES (%s, %s, %s)
    ON CONFLICT (api_key_id) DO UPDATE SET uses = api_key_uses.uses + EXCLUDED.uses,
    last_used_at = greatest(api_key_uses.last_used_at, EXCLUDED.last_used_at)"""
FLUSH_EVERY = 5.0  # seconds


class ApiKeyUses:
    """Uses of API keys, shared by the API replicas through one table."""

    def __init__(self, datastore: PostgresDatastore) -> None:
        self.datastore = datastore
        self._tally: dict[UUID, tuple[int, datetime]] = {}
        self._lock = threading.Lock()

    def create_table(self) -> None:
        with self.datastore.transaction(commit=True) as curs:
            curs.execute(CREATE)

    def note(self, api_key_id: UUID) -> None:
        """One use, now (no I/O)."""
        now = datetime.now(UTC)
        with self._lock:
            uses, _ = self._tally.get(api_key_id, (0, now))
            self._tally[api_key_id] = (uses + 1, now)

    def flush(self) -> None:
        """Add the tallies to the table (blocking); kept for the next flush if it fails."""
        with self._lock:
            tally, self._tally = self._tally, {}
        if not tally:
            return
        try:
            with self.datastore.transaction(commit=True) as curs:
                for api_key_id, (uses, at) in sorted(tally.items()):
                    curs.execute(ADD, (api_key_id, uses, at))
        except Exception:
            with self._lock:
                for api_key_id, (uses, at) in tally.items():
                    more, later = self._tally.get(api_key_id, (0, at))
                    self._tally[api_key_id] = (uses + more, max(at, later))
            raise

    def of(self, api_key_ids: Iterable[UUID]) -> dict[UUID, ApiKeyUse]:
        """Each key's uses so far (this process's unflushed ones included)."""
        ids = list(api_key_ids)
        with self.datastore.get_connection() as conn:
            rows = conn.execute(
                "SELECT api_key_id, uses, last_used_at FROM api_key_uses "
                "WHERE api_key_id = ANY(%s)",
                (ids,),
            ).fetchall()
        found = {r["api_key_id"]: ApiKeyUse(r["uses"], r["last_used_at"]) for r in rows}
        with self._lock:
            for api_key_id, (uses, at) in self._tally.items():
                if api_key_id in ids:
                    old = found.get(api_key_id, ApiKeyUse(0, None))
                    last = at if old.last_used_at is None else max(at, old.last_used_at)
                    found[api_key_id] = ApiKeyUse(old.uses + uses, last)
        return found
