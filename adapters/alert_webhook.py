"""Budget alerts delivered to a webhook from the `alert_outbox` table, in the background.

The budgets view writes an outbox row in the same transaction as each alert; this
task POSTs the rows to `TOKENDANCE_ALERT_WEBHOOK` and records the outcome. A run never
waits for it: it is a task of its own, never called in a request.

Delivery
    Each due row (`delivered_at IS NULL AND next_attempt_at <= now()`, oldest first, a
    small batch) is claimed with `FOR UPDATE SKIP LOCKED` and leased: its
    `next_attempt_at` moves past the longest a POST may take, in the claim's own
    commit, so another process skips it while it is in flight and takes it up again
    only if this one died with it. A 2xx sets `delivered_at`; anything else (another
    status, a refused connection, a timeout) adds one to `attempts`, keeps the error
    in `last_error` and schedules the next try after an exponential backoff with
    jitter, capped at `max_delay`. Each outcome is written as soon as the POSTs of
    the batch end.

    An HTTP POST cannot be made atomic with a database write: if the process dies (or
    Postgres goes away) between a receiver's 2xx and our write, that alert is sent
    again after its lease. Receivers drop a repeated `X-TokenDance-Delivery`.

Request (Stripe-like signing)
    body:                   the alert as compact JSON, keys sorted
    Content-Type:           application/json
    User-Agent:             TokenDance
    X-TokenDance-Delivery:  the alert's id (the same on every retry)
    X-TokenDance-Timestamp: unix seconds when this try was signed
    X-TokenDance-Signature: sha256=<hex HMAC-SHA256 with the secret of
                            f"{timestamp}.".encode() + body>

    A receiver recomputes the signature over the raw body with `verify`, and rejects a
    timestamp far from its clock (`tolerance`) so a captured request cannot be replayed.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

import httpx
import psycopg
from psycopg.rows import class_row

from projections.budgets import OUTBOX_TABLE

log = logging.getLogger(__name__)

SIGNATURE_PREFIX = "sha256="
LEASE_MARGIN = 30.0  # seconds a claimed row stays out of reach beyond the POST's timeout

_CLAIM = f"""
    UPDATE {OUTBOX_TABLE} o SET next_attempt_at = now() + make_interval(secs => %s)
    FROM (
        SELECT alert_id FROM {OUTBOX_TABLE}
        WHERE delivered_at IS NULL AND next_attempt_at <= now()
        ORDER BY created_at, alert_id LIMIT %s
        FOR UPDATE SKIP LOCKED
    ) due
    WHERE o.alert_id = due.alert_id
    RETURNING o.alert_id, o.payload, o.attempts, o.created_at"""
_DELIVERED = f"UPDATE {OUTBOX_TABLE} SET delivered_at = now() WHERE alert_id = %s"
_FAILED = (
    f"UPDATE {OUTBOX_TABLE} SET attempts = attempts + 1, last_error = %s, "
    "next_attempt_at = now() + make_interval(secs => %s) WHERE alert_id = %s"
)


def sign(secret: bytes, timestamp: int, body: bytes) -> str:
    """The `X-TokenDance-Signature` value of a body sent at `timestamp`."""
    mac = hmac.new(secret, f"{timestamp}.".encode() + body, hashlib.sha256)
    return SIGNATURE_PREFIX + mac.hexdigest()


def verify(
    secret: bytes,
    timestamp: int,
    body: bytes,
    signature: str,
    *,
    tolerance: float | None = None,
    now: float | None = None,
) -> bool:
    """Whether `signature` signs `body` at `timestamp` (compared in constant time), and,
    given a `tolerance` in seconds, whether `timestamp` is that close to `now`."""
    if tolerance is not None:
        current = time.time() if now is None else now
        if abs(current - timestamp) > tolerance:
            return False
    expected = sign(secret, timestamp, body).encode()
    return hmac.compare_digest(expected, signature.encode("utf-8", "replace"))


@dataclass(frozen=True)
class _Due:
    """A claimed outbox row."""

    alert_id: str
    payload: object
    attempts: int
    created_at: datetime


Connection = psycopg.AsyncConnection[tuple[object, ...]]


class AlertWebhook:
    """Delivers each alert of the outbox to one webhook, retrying until it takes it."""

    def __init__(
        self,
        database_url: str,
        url: str,
        secret: bytes,
        *,
        timeout: float = 10.0,
        base_delay: float = 1.0,
        max_delay: float = 300.0,
        poll_interval: float = 1.0,
        batch_size: int = 10,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.database_url = database_url
        self.url = url
        self.secret = secret
        self.timeout = timeout
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.poll_interval = poll_interval
        self.batch_size = batch_size
        self.clock = clock
        self.lease = timeout + LEASE_MARGIN
        self._conn: Connection | None = None
        self._client: httpx.AsyncClient | None = None

    async def run(self) -> None:
        """Deliver until cancelled, surviving Postgres and the webhook being down."""
        failures = 0
        try:
            while True:
                try:
                    claimed, _ = await self._pass()
                    failures = 0
                except Exception:
                    # Whatever went wrong, alerts must keep going out once it passes.
                    log.exception("alert webhook: delivery pass failed; retrying")
                    await self._drop_connection()
                    await asyncio.sleep(min(0.5 * 2.0**failures, 30.0))
                    failures = min(failures + 1, 10)
                    continue
                if claimed < self.batch_size:  # a full batch: more may be due now
                    await asyncio.sleep(self.poll_interval)
        finally:
            await self.aclose()

    async def deliver_due(self) -> int:
        """One pass: try each due alert of one batch once; the number delivered."""
        return (await self._pass())[1]

    async def aclose(self) -> None:
        """Close the database connection and the HTTP client (a later pass reopens them)."""
        await self._drop_connection()
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    def backoff(self, attempts: int) -> float:
        """Seconds before the next try of an alert that has failed `attempts` times before."""
        delay = min(self.max_delay, self.base_delay * 2.0 ** min(attempts, 32))
        return delay * (0.5 + random.random() / 2)  # jitter: retries of a burst spread out

    async def _pass(self) -> tuple[int, int]:
        """(alerts claimed, alerts delivered) in one batch."""
        conn = await self._connection()
        due = await self._claim(conn)
        outcomes = await asyncio.gather(*(self._post(row) for row in due))
        await self._record(conn, due, outcomes)
        return len(due), sum(error is None for error in outcomes)

    async def _claim(self, conn: Connection) -> list[_Due]:
        async with conn.cursor(row_factory=class_row(_Due)) as cur:
            await cur.execute(_CLAIM, (self.lease, self.batch_size))
            rows = await cur.fetchall()
        return sorted(rows, key=lambda r: (r.created_at, r.alert_id))

    async def _record(
        self, conn: Connection, due: Sequence[_Due], outcomes: Sequence[str | None]
    ) -> None:
        async with conn.transaction(), conn.cursor() as cur:
            for row, error in zip(due, outcomes, strict=True):
                if error is None:
                    await cur.execute(_DELIVERED, (row.alert_id,))
                else:
                    log.warning("alert %s not delivered: %s", row.alert_id, error)
                    delay = self.backoff(row.attempts)
                    await cur.execute(_FAILED, (error, delay, row.alert_id))

    async def _post(self, row: _Due) -> str | None:
        """POST one alert: None when the webhook took it, else what went wrong."""
        body = json.dumps(row.payload, separators=(",", ":"), sort_keys=True).encode()
        timestamp = int(self.clock())
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "TokenDance",
            "X-TokenDance-Delivery": row.alert_id,
            "X-TokenDance-Timestamp": str(timestamp),
            "X-TokenDance-Signature": sign(self.secret, timestamp, body),
        }
        try:
            # httpx's timeout bounds each read; this bounds the whole POST (the lease).
            async with asyncio.timeout(self.timeout):
                response = await self._http().post(self.url, content=body, headers=headers)
        except TimeoutError:
            return f"no answer within {self.timeout} s"
        except httpx.HTTPError as e:
            return f"{type(e).__name__}: {e}"
        if response.is_success:
            return None
        return f"HTTP {response.status_code}: {response.text[:200]}"

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self.timeout, follow_redirects=False)
        return self._client

    async def _connection(self) -> Connection:
        if self._conn is None or self._conn.closed or self._conn.broken:
            await self._drop_connection()
            self._conn = await psycopg.AsyncConnection.connect(self.database_url, autocommit=True)
        return self._conn

    async def _drop_connection(self) -> None:
        if self._conn is not None:
            conn, self._conn = self._conn, None
            try:
                await conn.close()
            except psycopg.Error as e:  # already gone with the server: nothing to close
                log.debug("alert webhook: closing a dead connection: %s", e)
