"""Idempotency-Key across a crash: a retry after SIGKILL and a restart is never 409."""

from __future__ import annotations

import os
import random
import signal
import threading
import time

import httpx
import psycopg
import pytest

from tests.e2e.client import Server, register
from tests.e2e.conftest import StartServer

pytestmark = [pytest.mark.e2e]

WRITERS = 4


def create(http: httpx.Client, workspace: str, key: str) -> httpx.Response:
    return http.post(
        "/api/v1/sessions",
        json={"workspace_id": workspace, "title": key},
        headers={"Idempotency-Key": key},
    )


def hammer(server: Server, token: str, workspace: str, stop: threading.Event) -> dict[str, bytes]:
    """Creates with fresh keys from a few clients until `stop`; the answers received."""
    answered: dict[str, bytes] = {}
    lock = threading.Lock()

    def writer(n: int) -> None:
        with server.client(token) as http:
            for i in range(10_000):
                if stop.is_set():
                    return
                key = f"w{n}-{i}"
                try:
                    response = create(http, workspace, key)
                except httpx.HTTPError:
                    return  # the server is gone
                assert response.status_code == 201, response.text
                with lock:
                    answered[key] = response.content

    threads = [threading.Thread(target=writer, args=(n,), daemon=True) for n in range(WRITERS)]
    for t in threads:
        t.start()
    stop.wait()
    for t in threads:
        t.join(30)
    return answered


def freeze_with_a_claim_in_flight(server: Server, database_url: str) -> list[str]:
    """SIGSTOP the server at a moment when it holds claimed keys with no answer yet."""
    assert server.process is not None
    for _ in range(50):
        time.sleep(random.uniform(0.05, 0.2))
        os.kill(server.process.pid, signal.SIGSTOP)
        # A statement the server sent just before it stopped still commits: let it, so
        # a claim read as open below can never be answered by then.
        time.sleep(0.3)
        with psycopg.connect(database_url, autocommit=True) as conn:
            rows = conn.execute("SELECT key FROM idempotency_keys WHERE status IS NULL").fetchall()
        if rows:
            return [r[0] for r in rows]
        os.kill(server.process.pid, signal.SIGCONT)
    raise AssertionError("never caught a request in flight")


def test_a_request_retried_after_sigkill_and_restart_answers_or_runs_never_409(
    start_server: StartServer, database_url: str
) -> None:
    server = start_server()
    with server.client() as anonymous:
        user = register(anonymous, "alice@example.com")
    token, workspace = str(user["access_token"]), str(user["workspace_id"])

    stop = threading.Event()
    result: dict[str, dict[str, bytes]] = {}
    runner = threading.Thread(
        target=lambda: result.update(a=hammer(server, token, workspace, stop))
    )
    runner.start()
    in_flight = freeze_with_a_claim_in_flight(server, database_url)
    assert server.process is not None
    server.process.kill()  # SIGKILL while frozen: the claims are never answered
    server.process.wait()
    stop.set()
    runner.join(60)
    answered = result["a"]

    restarted = start_server()  # at once, on the same database
    with restarted.client(token) as http:
        for key in in_flight:
            retry = create(http, workspace, key)
            assert retry.status_code == 201, (key, retry.status_code, retry.text)
            assert "idempotent-replayed" not in retry.headers  # it ran, now
            again = create(http, workspace, key)
            assert (again.status_code, again.content) == (201, retry.content)
            assert again.headers["idempotent-replayed"] == "true"
        for key, body in list(answered.items())[-5:]:
            retry = create(http, workspace, key)
            assert (retry.status_code, retry.content) == (201, body)  # the recorded answer
            assert retry.headers["idempotent-replayed"] == "true"
