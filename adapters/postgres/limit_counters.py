"""The rate-limit counters in Postgres, shared by every API replica (`RateLimits`' counters).

Requests and uploads per minute: a sliding window, estimated from two fixed windows.
A row per (caller, window) holds that window's requests and uploads; a request is
admitted when the previous window's count, weighted by the share of the sliding minute
that still overlaps it, plus the current window's, leaves room for one more. One
statement per request (`INSERT ... ON CONFLICT DO UPDATE ... WHERE there is room`) counts
it, or changes nothing when it is refused; an upload moves both counters of its row in
that one statement, or neither. `Retry-After` is when the estimate leaves room again,
at most a window (a burst that filled a whole window in its first 1/limit may meet one
more short refusal after that). Windows older than the previous one are deleted now and
then.

Open streams: a row per open stream, with the replica that holds it (`owner`) and an
expiry the replica pushes on (`refresh`) while the stream is open: a lease. A caller's
streams are counted with expired rows left out, so the streams of a replica that died
free themselves when their leases run out; a stream that ends deletes its row. Opening
one is one call of a PL/pgSQL function (`rate_limit_open_stream`), its own transaction:
it takes a transaction-level advisory lock on the caller, so two replicas never both
take the last slot, and commits without waiting for the disk, so a caller's streams
queue on the lock for one statement rather than an fsync.

Times come from the replica's clock (`time.time`), passed to every statement. Any
database error is raised as `CountersUnavailable` (the limits then fail open).
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable, Collection

from eventsourcing.postgres import PostgresDatastore
from psycopg.rows import DictRow

from adapters.http.middleware.limit_counters import Counted, Over, StreamAdmission
from adapters.postgres.shared_tables import SharedTables

WINDOW = 60.0  # seconds
LEASE = 30.0  # seconds an open stream's slot lasts unless its replica refreshes it
SWEEP_EVERY = 60.0  # seconds between deletions of old windows and expired leases
SPACE = 0x7D1E  # first key of the two-int advisory locks: "a caller's stream slots"
SLACK = 1e-9  # a weighted count that lands on the limit up to float error is at it

CREATE = (
    """CREATE TABLE IF NOT EXISTS rate_limit_windows (
        caller text NOT NULL,
        window_no bigint NOT NULL,   -- seconds since the epoch, divided by the window
        requests integer NOT NULL,
        uploads integer NOT NULL,
        PRIMARY KEY (caller, window_no)
    )""",
    """CREATE TABLE IF NOT EXISTS rate_limit_streams (
        slot uuid PRIMARY KEY,
        caller text NOT NULL,
        owner uuid NOT NULL,         -- the replica holding the stream
        expires_at timestamptz NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS rate_limit_streams_by_caller ON rate_limit_streams (caller)",
)

# Count a request (and an upload when %(uploads)s is 1) if the estimate leaves room.
HIT = f"""
WITH previous AS (
    SELECT coalesce(max(requests), 0) AS requests, coalesce(max(uploads), 0) AS uploads
      FROM rate_limit_windows WHERE caller = %(caller)s AND window_no = %(window)s - 1
), current AS (
    SELECT requests, uploads
      FROM rate_limit_windows WHERE caller = %(caller)s AND window_no = %(window)s
), counted AS (
    INSERT INTO rate_limit_windows AS w (caller, window_no, requests, uploads)
    SELECT %(caller)s, %(window)s, 1, %(uploads)s FROM previous p
     WHERE p.requests * %(weight)s + 1 <= %(max_requests)s + {SLACK}
       AND (%(uploads)s = 0 OR p.uploads * %(weight)s + 1 <= %(max_uploads)s + {SLACK})
    ON CONFLICT (caller, window_no) DO UPDATE
       SET requests = w.requests + 1, uploads = w.uploads + EXCLUDED.uploads
     WHERE w.requests + 1 + (SELECT requests FROM previous) * %(weight)s
           <= %(max_requests)s + {SLACK}
       AND (EXCLUDED.uploads = 0 OR w.uploads + 1 + (SELECT uploads FROM previous) * %(weight)s
           <= %(max_uploads)s + {SLACK})
    RETURNING 1
)
SELECT EXISTS (SELECT FROM counted) AS admitted,
       p.requests AS previous_requests, p.uploads AS previous_uploads,
       coalesce(c.requests, 0) AS requests, coalesce(c.uploads, 0) AS uploads
  FROM previous p LEFT JOIN current c ON true
"""

# Open a stream if the caller has room: one statement, its own transaction. The caller's
# lock is held to that transaction's end (the insert's count, a statement of its own in
# the function, sees every slot taken before the lock was granted). Its commit does not
# wait for the disk (a slot lost in a crash is a lease that runs out), so the next
# request of the same caller waits for one statement, not for an fsync.
OPEN_FUNCTION = f"""
CREATE OR REPLACE FUNCTION rate_limit_open_stream(
    new_slot uuid, of_caller text, by_owner uuid, expires double precision,
    now double precision, room integer
) RETURNS uuid LANGUAGE plpgsql AS $body$
DECLARE
    taken uuid;
BEGIN
    PERFORM pg_advisory_xact_lock({SPACE}, hashtext(of_caller));
    PERFORM set_config('synchronous_commit', 'off', true);
    INSERT INTO rate_limit_streams (slot, caller, owner, expires_at)
    SELECT new_slot, of_caller, by_owner, to_timestamp(expires)
     WHERE (SELECT count(*) FROM rate_limit_streams
             WHERE caller = of_caller AND expires_at > to_timestamp(now)) < room
    RETURNING slot INTO taken;
    RETURN taken;
END;
$body$"""

OPEN = "SELECT rate_limit_open_stream(%s, %s, %s, %s, %s, %s) AS slot"

# A stream request (an SSE response: a chat message, a session's stream): a slot and the
# request counted in one statement, its own transaction, under the caller's lock as when
# a slot is opened alone; `HIT` itself counts the request (no upload), and the slot is
# taken only if it is admitted. One round trip instead of two for every chat message.
ADMIT_FUNCTION = f"""
CREATE OR REPLACE FUNCTION rate_limit_admit_stream(
    new_slot uuid, of_caller text, by_owner uuid, expires double precision,
    now double precision, room integer, win bigint, weight double precision,
    max_requests integer,
    OUT slot uuid, OUT streams_full boolean, OUT admitted boolean,
    OUT previous_requests integer, OUT previous_uploads integer,
    OUT current_requests integer, OUT current_uploads integer
) LANGUAGE plpgsql AS $body$
#variable_conflict use_column
BEGIN
    PERFORM pg_advisory_xact_lock({SPACE}, hashtext(of_caller));
    PERFORM set_config('synchronous_commit', 'off', true);
    streams_full := (SELECT count(*) FROM rate_limit_streams
                      WHERE caller = of_caller AND expires_at > to_timestamp(now)) >= room;
    IF streams_full THEN
        RETURN;
    END IF;
    {
    HIT
    % {
        "caller": "of_caller",
        "window": "win",
        "weight": "weight",
        "uploads": "0",
        "max_requests": "max_requests",
        "max_uploads": "0",
    }
}
    INTO admitted, previous_requests, previous_uploads, current_requests, current_uploads;
    IF admitted THEN
        INSERT INTO rate_limit_streams (slot, caller, owner, expires_at)
        VALUES (new_slot, of_caller, by_owner, to_timestamp(expires));
        slot := new_slot;
    END IF;
END;
$body$"""

ADMIT = "SELECT * FROM rate_limit_admit_stream(%s, %s, %s, %s, %s, %s, %s, %s, %s)"
CLOSE = "DELETE FROM rate_limit_streams WHERE slot = %s"
SWEEP = (
    "WITH windows AS (DELETE FROM rate_limit_windows WHERE window_no < %s) "
    "DELETE FROM rate_limit_streams WHERE expires_at <= to_timestamp(%s)"
)


class PostgresCounters(SharedTables):
    """Rate-limit counters and stream leases in Postgres tables (created on first use)."""

    statements = (*CREATE, OPEN_FUNCTION, ADMIT_FUNCTION)
    space = SPACE

    def __init__(
        self,
        datastore: PostgresDatastore,
        *,
        window: float = WINDOW,
        lease: float = LEASE,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(datastore)
        self.window, self.lease, self._clock = window, lease, clock
        self.owner = uuid.uuid4()  # this replica

    def hit(self, key: str, *, requests: int, uploads: int | None) -> Over | None:
        now, params = self._hit_params(key, requests, uploads)
        self._sweep_now_and_then()
        with self._connection() as conn:
            row = conn.execute(HIT, params).fetchone()
        assert row is not None
        return self._hit_outcome(row, now, requests, uploads)

    def _hit_params(
        self, key: str, requests: int, uploads: int | None
    ) -> tuple[float, dict[str, object]]:
        """The time now and `HIT`'s parameters."""
        now = self._clock()
        window, elapsed = self._window_at(now)
        return now, {
            "caller": key,
            "window": window,
            "weight": 1 - elapsed / self.window,
            "uploads": 0 if uploads is None else 1,
            "max_requests": requests,
            "max_uploads": uploads or 0,
        }

    def _hit_outcome(
        self, row: DictRow, now: float, requests: int, uploads: int | None
    ) -> Over | None:
        """What `HIT`'s row says: admitted, or which counter is full and for how long."""
        if row["admitted"]:
            return None
        _, elapsed = self._window_at(now)
        counter: Counted = "requests"
        limit = requests
        if uploads is not None:
            weighted = row["previous_uploads"] * (1 - elapsed / self.window)
            if weighted + row["uploads"] + 1 > uploads + SLACK:
                counter, limit = "uploads", uploads
        wait = self._room_in(limit, row[f"previous_{counter}"], row[counter], elapsed)
        return Over(counter, min(max(wait, 0.0), self.window))

    def open_stream(self, key: str, limit: int) -> str | None:
        now = self._clock()
        params = (uuid.uuid4(), key, self.owner, now + self.lease, now, limit)
        with self._connection() as conn:
            row = conn.execute(OPEN, params, prepare=True).fetchone()
        return None if row is None or row["slot"] is None else str(row["slot"])

    def admit_stream(self, key: str, *, requests: int, streams: int) -> StreamAdmission:
        now, params = self._admit_params(key, requests, streams)
        self._sweep_now_and_then()
        with self._connection() as conn:
            row = conn.execute(ADMIT, params, prepare=True).fetchone()
        assert row is not None
        return self._admit_outcome(row, now, requests)

    def _admit_params(
        self, key: str, requests: int, streams: int
    ) -> tuple[float, tuple[object, ...]]:
        """The time now and `ADMIT`'s parameters (a new slot's id among them)."""
        now = self._clock()
        window, elapsed = self._window_at(now)
        return now, (
            uuid.uuid4(), key, self.owner, now + self.lease, now, streams, window,
            1 - elapsed / self.window, requests,
        )  # fmt: skip

    def _admit_outcome(self, row: DictRow, now: float, requests: int) -> StreamAdmission:
        """What `ADMIT`'s row says: the slot taken, no slot free, or no room for the request."""
        if row["streams_full"]:
            return None, None
        if row["admitted"]:
            return str(row["slot"]), None
        _, elapsed = self._window_at(now)
        wait = self._room_in(requests, row["previous_requests"], row["current_requests"], elapsed)
        return None, Over("requests", min(max(wait, 0.0), self.window))

    def close_stream(self, slot: str) -> None:
        with self._connection() as conn:
            conn.execute(CLOSE, (slot,))

    def refresh(self, slots: Collection[str]) -> None:
        with self._connection() as conn:
            conn.execute(
                "UPDATE rate_limit_streams SET expires_at = to_timestamp(%s) "
                "WHERE slot = ANY(%s::uuid[]) AND owner = %s",
                (self._clock() + self.lease, list(slots), self.owner),
            )

    def sweep(self) -> None:
        """Delete the windows no estimate reads any more, and the leases expired a lease
        ago (not at once: a replica that refreshes late still finds its rows)."""
        with self._connection() as conn:
            conn.execute(SWEEP, self._sweep_params())

    def _sweep_params(self) -> tuple[int, float]:
        now = self._clock()
        return self._window_at(now)[0] - 1, now - self.lease

    def _sweep_due(self) -> bool:
        """Whether it is time to sweep (then not again for `SWEEP_EVERY` seconds)."""
        now = time.monotonic()
        if now < self._next_sweep:
            return False
        self._next_sweep = now + SWEEP_EVERY
        return True

    def _window_at(self, now: float) -> tuple[int, float]:
        """The fixed window `now` falls in, and the seconds of it gone by."""
        window = math.floor(now / self.window)
        return window, now - window * self.window

    def _room_in(self, limit: int, previous: int, current: int, elapsed: float) -> float:
        """Seconds until `previous * weight + current + 1 <= limit` (weight falling to 0)."""
        if current + 1 <= limit:  # room comes as the previous window slides out
            if previous <= 0:
                return 0.0  # room already (another replica's request just left it)
            return self.window * (1 - (limit - 1 - current) / previous) - elapsed
        # Only in the next window, as this one (then the previous) slides out.
        return self.window - elapsed + self.window * (1 - (limit - 1) / current)

    def _sweep_now_and_then(self) -> None:
        if self._sweep_due():
            self.sweep()
