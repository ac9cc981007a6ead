"""Failed logins in Postgres, shared by every API replica (`LoginLimits`' failures).

A row per (key, attempt), a key being an account (its normalized email) or a client
address: an attempt is written under both before its password is checked, and deleted
again if it did not fail, so the rows of the last 15 minutes are the failures (and the
attempts in flight). Reserving is one call of a PL/pgSQL function (`login_attempt`), its
own transaction: it takes a transaction-level advisory lock on each key (in order, so two
attempts sharing keys never deadlock), counts each key's rows in the window, and inserts
the attempt's rows only when every key has room; otherwise it inserts nothing and
answers when the fullest key frees a slot (its `limit`-th newest row leaves the window).
So attempts racing on any number of replicas never pass the limit together.

Times come from the replica's clock (`time.time`), passed to every statement. Rows older
than the window are deleted now and then. Any database error is raised as
`CountersUnavailable` (the limit then fails open, like the rate limits).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence

from eventsourcing.postgres import PostgresDatastore

from adapters.http.middleware.limit_counters import LOGIN_WINDOW, Locked, check_limit
from adapters.postgres.shared_tables import SharedTables

SPACE = 0x7D1F  # first key of the two-int advisory locks: "a key's failed logins"
SWEEP_EVERY = 60.0  # seconds between deletions of rows older than the window

CREATE = (
    """CREATE TABLE IF NOT EXISTS login_failures (
        key text NOT NULL,           -- 'account:<email>' or 'address:<client address>'
        attempt uuid NOT NULL,
        at timestamptz NOT NULL,
        PRIMARY KEY (key, attempt)
    )""",
    "CREATE INDEX IF NOT EXISTS login_failures_by_time ON login_failures (at)",
)

# NULL: the attempt is counted under every key. Else the time (epoch seconds) of the
# fullest key's `room`-th newest failure: a slot frees when it leaves the window.
ATTEMPT_FUNCTION = f"""
CREATE OR REPLACE FUNCTION login_attempt(
    new_attempt uuid, of_keys text[], now double precision, since double precision,
    room integer
) RETURNS double precision LANGUAGE plpgsql AS $body$
DECLARE
    k text;
    frees double precision;
BEGIN
    FOR k IN SELECT DISTINCT unnest(of_keys) ORDER BY 1 LOOP
        PERFORM pg_advisory_xact_lock({SPACE}, hashtext(k));
    END LOOP;
    SELECT max(extract(epoch FROM nth)) INTO frees FROM (
        SELECT (array_agg(at ORDER BY at DESC))[room] AS nth
          FROM login_failures
         WHERE key = ANY(of_keys) AND at > to_timestamp(since)
         GROUP BY key HAVING count(*) >= room
    ) AS full_keys;
    IF frees IS NULL THEN
        INSERT INTO login_failures (key, attempt, at)
        SELECT DISTINCT unnest(of_keys), new_attempt, to_timestamp(now);
    END IF;
    RETURN frees;
END;
$body$"""

ATTEMPT = "SELECT login_attempt(%s, %s, %s, %s, %s) AS frees"


class PostgresLoginFailures(SharedTables):
    """Failed logins in a Postgres table (created on first use), shared by the replicas."""

    statements = (*CREATE, ATTEMPT_FUNCTION)
    space = SPACE

    def __init__(
        self,
        datastore: PostgresDatastore,
        *,
        window: float = LOGIN_WINDOW,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(datastore)
        self.window, self._clock = window, clock

    def reserve(self, keys: Sequence[str], limit: int) -> str | Locked:
        check_limit(limit)
        now = self._clock()
        attempt = uuid.uuid4()
        self._sweep_now_and_then(now)
        with self._connection() as conn:
            params = (attempt, list(keys), now, now - self.window, limit)
            row = conn.execute(ATTEMPT, params, prepare=True).fetchone()
        if row is None or row["frees"] is None:
            return str(attempt)
        return Locked(min(max(row["frees"] + self.window - now, 0.0), self.window))

    def release(self, attempt: str, keys: Sequence[str]) -> None:
        with self._connection() as conn:
            conn.execute(
                "DELETE FROM login_failures WHERE key = ANY(%s) AND attempt = %s",
                (list(keys), uuid.UUID(attempt)),
            )

    def _sweep_now_and_then(self, now: float) -> None:
        if time.monotonic() < self._next_sweep:
            return
        self._next_sweep = time.monotonic() + SWEEP_EVERY
        with self._connection() as conn:
            conn.execute(
                "DELETE FROM login_failures WHERE at <= to_timestamp(%s)", (now - self.window,)
            )
