"""Budget alerts to a webhook on real Postgres and a real local HTTP server: each alert
is taken by the webhook exactly once, through a refusal, a restart and two deliverers."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime

import psycopg
import pytest
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from adapters.alert_webhook import AlertWebhook, sign, verify
from projections.budgets import OUTBOX_TABLE, BudgetsView

# Each test makes the tables it uses on an empty database (`database_url`).
pytestmark = [pytest.mark.integration, pytest.mark.empty_database]

SECRET = b"test-secret-of-at-least-32-bytes!"


@dataclass(frozen=True)
class Request:
    """A request the webhook received, and the status it answered."""

    status: int
    headers: dict[str, str]  # names lower-cased
    body: bytes

    @property
    def delivery(self) -> str:
        return self.headers["x-tokendance-delivery"]


class Webhook:
    """A tiny HTTP/1.1 server that answers 500 to its first `failures` requests, then 200."""

    def __init__(self, failures: int = 1) -> None:
        self.failures = failures
        self.requests: list[Request] = []
        self.took_one = asyncio.Event()
        self._server: asyncio.Server | None = None

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}/hooks/alerts"

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    def taken(self, alert_id: str) -> list[Request]:
        """The requests for the alert that the webhook answered with 200."""
        return [r for r in self.requests if r.delivery == alert_id and r.status == 200]

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        headers = dict(
            (name.strip().lower(), value.strip())
            for name, _, value in (line.partition(":") for line in head[1:] if line)
        )
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        status = 500 if len(self.requests) < self.failures else 200
        self.requests.append(Request(status, headers, body))
        writer.write(
            f"HTTP/1.1 {status} {'OK' if status == 200 else 'Oops'}\r\n"
            "Content-Length: 0\r\nConnection: close\r\n\r\n".encode()
        )
        await writer.drain()
        writer.close()
        if status == 200:
            self.took_one.set()


@pytest.fixture
async def webhook() -> AsyncIterator[Webhook]:
    hook = Webhook(failures=1)
    yield hook
    await hook.stop()


@pytest.fixture
async def outbox(database_url: str) -> str:
    """The test database with the budgets view's tables (the outbox among them)."""
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        for statement in BudgetsView.create_statements:
            await conn.execute(statement)
    return database_url


async def add_alert(database_url: str, alert_id: str) -> dict[str, object]:
    """An outbox row as the budgets view writes it, due now; its payload."""
    payload: dict[str, object] = {
        "type": "budget.threshold_crossed",
        "alert_id": alert_id,
        "threshold": 80,
        "spent_usd": "8.00",
    }
    async with await psycopg.AsyncConnection.connect(database_url, autocommit=True) as conn:
        await conn.execute(
            f"INSERT INTO {OUTBOX_TABLE} (alert_id, payload, created_at, next_attempt_at) "
            "VALUES (%s, %s, now(), now())",
            (alert_id, Jsonb(payload)),
        )
    return payload


async def outbox_row(database_url: str, alert_id: str) -> dict[str, object]:
    async with await psycopg.AsyncConnection.connect(database_url, row_factory=dict_row) as conn:
        cur = await conn.execute(
            f"SELECT *, now() AS db_now FROM {OUTBOX_TABLE} WHERE alert_id = %s", (alert_id,)
        )
        row = await cur.fetchone()
    assert row is not None
    return row


def deliverer(database_url: str, url: str, **options: float) -> AlertWebhook:
    options = {"timeout": 2.0, "base_delay": 0.0, "poll_interval": 0.01} | options
    return AlertWebhook(database_url, url, SECRET, **options)


async def test_an_alert_refused_once_is_taken_exactly_once_across_a_restart(
    outbox: str, webhook: Webhook
) -> None:
    url = await webhook.start()
    payload = await add_alert(outbox, "b1:3")

    first = deliverer(outbox, url)
    assert await first.deliver_due() == 0  # the webhook answers 500
    refused = await outbox_row(outbox, "b1:3")
    assert refused["delivered_at"] is None
    assert refused["attempts"] == 1
    assert "HTTP 500" in str(refused["last_error"])
    await first.aclose()  # the process stops; another one starts

    restarted = deliverer(outbox, url)
    assert await restarted.deliver_due() == 1
    await restarted.aclose()
    again = deliverer(outbox, url)
    assert await again.deliver_due() == 0  # a further restart sends nothing
    await again.aclose()

    assert [r.status for r in webhook.requests] == [500, 200]
    [taken] = webhook.taken("b1:3")
    assert json.loads(taken.body) == payload
    assert taken.body == json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()
    assert taken.headers["content-type"] == "application/json"
    assert taken.headers["user-agent"] == "TokenDance"
    timestamp = int(taken.headers["x-tokendance-timestamp"])
    assert verify(SECRET, timestamp, taken.body, taken.headers["x-tokendance-signature"])
    assert not verify(b"another secret", timestamp, taken.body, sign(SECRET, timestamp, b"{}"))
    delivered = await outbox_row(outbox, "b1:3")
    assert delivered["delivered_at"] is not None
    assert delivered["attempts"] == 1


async def test_two_alerts_are_each_taken_once_by_two_deliverers_at_once(
    outbox: str, webhook: Webhook
) -> None:
    url = await webhook.start()
    await add_alert(outbox, "b1:3")
    await add_alert(outbox, "b2:7")
    one, other = deliverer(outbox, url), deliverer(outbox, url)
    delivered = 0
    for _ in range(10):
        counts = await asyncio.gather(one.deliver_due(), other.deliver_due())
        delivered += sum(counts)
        if delivered == 2:
            break
    await one.aclose()
    await other.aclose()

    assert delivered == 2
    assert len(webhook.taken("b1:3")) == 1
    assert len(webhook.taken("b2:7")) == 1
    assert len(webhook.requests) == 3  # plus the one refused


async def test_with_the_webhook_down_an_alert_waits_with_its_error(outbox: str) -> None:
    with socket.socket() as s:  # a port nothing listens on: connections are refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    down = deliverer(outbox, f"http://127.0.0.1:{port}/", base_delay=60.0)
    await add_alert(outbox, "b1:3")

    assert await down.deliver_due() == 0
    row = await outbox_row(outbox, "b1:3")
    assert row["delivered_at"] is None
    assert row["attempts"] == 1
    assert "ConnectError" in str(row["last_error"])
    next_attempt_at, db_now = row["next_attempt_at"], row["db_now"]
    assert isinstance(next_attempt_at, datetime) and isinstance(db_now, datetime)
    assert next_attempt_at > db_now  # backed off
    assert await down.deliver_due() == 0  # not due again yet
    assert (await outbox_row(outbox, "b1:3"))["attempts"] == 1
    await down.aclose()


async def test_run_delivers_in_the_background_until_cancelled(
    outbox: str, webhook: Webhook
) -> None:
    url = await webhook.start()
    await add_alert(outbox, "b1:3")
    task = asyncio.create_task(deliverer(outbox, url).run())
    await asyncio.wait_for(webhook.took_one.wait(), timeout=5)
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert task.cancelled()
    assert [r.status for r in webhook.requests] == [500, 200]


async def test_run_outlives_an_unreachable_database() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    database_url = f"postgresql://nobody@127.0.0.1:{port}/none?connect_timeout=1"
    task = asyncio.create_task(deliverer(database_url, "http://127.0.0.1:9/").run())
    await asyncio.sleep(0.2)  # a few failed passes
    assert not task.done()  # run() logged and retried; it did not raise
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert task.cancelled()


def test_a_signature_binds_the_body_the_timestamp_and_the_secret() -> None:
    body = b'{"alert_id":"b1:3"}'
    signature = sign(SECRET, 1_700_000_000, body)
    assert signature.startswith("sha256=")
    assert verify(SECRET, 1_700_000_000, body, signature)
    assert not verify(SECRET, 1_700_000_001, body, signature)
    assert not verify(SECRET, 1_700_000_000, body + b" ", signature)
    assert not verify(b"x" * 32, 1_700_000_000, body, signature)
    assert not verify(SECRET, 1_700_000_000, body, "sha256=\u00e9")
    assert verify(SECRET, 1_700_000_000, body, signature, tolerance=300, now=1_700_000_100)
    assert not verify(SECRET, 1_700_000_000, body, signature, tolerance=300, now=1_700_000_400)
