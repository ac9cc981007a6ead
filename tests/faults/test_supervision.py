"""Embedded servers under supervision: `serve` SIGKILLed and restarted at once, a killed
NATS restarted, a data directory another `serve` owns. Real processes, real signals."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest

from tests.e2e.client import register, settled, wait_until
from tests.faults.serve import READY_TIMEOUT, Serve, nats_state, postmaster_pid, serve_env
from tests.integration.support import stream_notification_ids

pytestmark = [pytest.mark.fault, pytest.mark.slow]

API = "/api/v1"
RESTARTS = 10
STAYS_READY = 2.0  # seconds a restarted serve must stay ready


@pytest.fixture
def data_dir(data_root: Path) -> Path:
    return data_root / f"faults-{uuid.uuid4().hex[:8]}"


@pytest.fixture
def serves() -> Iterator[list[Serve]]:
    """Every serve a test starts is stopped after it."""
    started: list[Serve] = []
    yield started
    for serve in started:
        serve.stop()


def stays_ready(serve: Serve, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        response = serve.readiness()
        assert response is not None and response.status_code == 200, (
            f"serve stopped being ready: {response and response.text}\n{serve.tail()}"
        )
        time.sleep(0.2)


def test_serve_killed_and_restarted_at_once_ten_times_stays_ready(
    data_dir: Path, serves: list[Serve]
) -> None:
    serve = Serve(data_dir)
    serves.append(serve.start().wait_ready())
    for attempt in range(RESTARTS):
        # Every other time the old watchdog is frozen while its owner dies, so the new
        # serve surely adopts the running Postgres before the watchdog can act.
        frozen = serve.watchdog() if attempt % 2 == 0 else None
        if frozen is not None:
            frozen.suspend()
        before = postmaster_pid(data_dir)
        serve.kill()
        serve = Serve(data_dir, port=serve.port)
        serves.append(serve.start().wait_ready())
        if frozen is not None:
            assert postmaster_pid(data_dir) == before, "the running Postgres was not adopted"
            frozen.resume()
            frozen.wait(30)  # it must see the adoption and leave the servers alone
        stays_ready(serve, STAYS_READY)
        if frozen is not None:
            assert postmaster_pid(data_dir) == before, "the old watchdog stopped Postgres"


def test_killed_nats_and_postgres_are_restarted_and_everything_catches_up(
    data_dir: Path, serves: list[Serve]
) -> None:
    serve = Serve(data_dir)
    serves.append(serve.start().wait_ready())
    http = httpx.Client(base_url=serve.url, timeout=60)
    account = register(http, f"faults-{uuid.uuid4().hex[:6]}@example.com")
    http.headers["Authorization"] = f"Bearer {account['access_token']}"
    workspace = account["workspace_id"]
    sessions = [new_session(http, workspace, "before") for _ in range(3)]

    killed = nats_state(data_dir)
    # The port is held while NATS is down, so the outage lasts as long as the test
    # wants: the supervisor's restarts fail (and back off) until it is let go.
    with holding_port(killed["pid"], killed["port"]):
        wait_until(lambda: nats_down(serve), timeout=READY_TIMEOUT)
        sessions += [new_session(http, workspace, "during") for _ in range(3)]
        for sid in sessions:
            renamed = http.patch(f"{API}/sessions/{sid}", json={"title": f"renamed {sid}"})
            assert renamed.status_code == 200, renamed.text
    wait_until(lambda: nats_state(data_dir)["pid"] != killed["pid"], timeout=READY_TIMEOUT)
    assert nats_state(data_dir)["port"] == killed["port"]  # clients reconnect to one URL
    serve.wait_ready()

    postgres = postmaster_pid(data_dir)
    os.kill(postgres, signal.SIGKILL)
    wait_until(lambda: "embedded postgres restarted" in serve.log.read_text(), timeout=60)
    assert postmaster_pid(data_dir) != postgres
    sessions.append(new_session(http, workspace, "after"))  # the pool has recovered
    renamed = http.patch(
        f"{API}/sessions/{sessions[-1]}", json={"title": f"renamed {sessions[-1]}"}
    )
    assert renamed.status_code == 200, renamed.text
    serve.wait_ready()
    settled(http)
    read_models_match_the_log(http, workspace, sessions)
    assert stream_ids(killed["port"]) == notification_ids(data_dir), (
        "the stream does not hold each committed event once, in order"
    )


def read_models_match_the_log(http: httpx.Client, workspace: object, sessions: list[str]) -> None:
    listed = http.get(f"{API}/sessions", params={"workspace_id": workspace, "limit": 100}).json()
    assert isinstance(listed, list) or "items" in listed, listed
    rows = listed["items"] if isinstance(listed, dict) else listed
    assert sorted(r["id"] for r in rows) == sorted(sessions)  # each once
    for row in rows:
        log = http.get(f"{API}/sessions/{row['id']}/events", params={"limit": 1000}).json()
        events = log["items"] if isinstance(log, dict) else log
        assert [e["version"] for e in events] == list(range(1, len(events) + 1))
        assert row["version"] == len(events)
        assert row["title"] == f"renamed {row['id']}"


def test_a_second_serve_on_an_owned_data_directory_names_the_owner(
    data_dir: Path, serves: list[Serve]
) -> None:
    owner = Serve(data_dir)
    serves.append(owner.start().wait_ready())
    assert owner.process is not None
    postgres = postmaster_pid(data_dir)
    second = subprocess.run(
        [sys.executable, "-m", "adapters.cli", "--data-dir", str(data_dir), "serve",
         "--port", str(Serve(data_dir).port)],
        env=serve_env(), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert second.returncode == 1
    assert f"pid {owner.process.pid}" in second.stderr, second.stderr
    assert "Traceback" not in second.stderr, second.stderr
    stays_ready(owner, STAYS_READY)
    assert postmaster_pid(data_dir) == postgres


def new_session(http: httpx.Client, workspace: object, title: str) -> str:
    created = http.post(f"{API}/sessions", json={"workspace_id": workspace, "title": title})
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


def nats_down(serve: Serve) -> bool:
    response = serve.readiness()
    return (
        response is not None
        and response.status_code == 503
        and str(response.json()["checks"]["nats"]).startswith("unavailable")
    )


@contextlib.contextmanager
def holding_port(pid: int, port: int) -> Iterator[None]:
    """SIGKILL the process `pid`, then listen on its `port` until the block ends."""
    holder = socket.socket()
    holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while True:  # the port is free once the killed process is gone
        try:
            holder.bind(("127.0.0.1", port))
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.001)
    holder.listen()
    try:
        yield
    finally:
        holder.close()


def notification_ids(data_dir: Path) -> list[int]:
    socket_dir = (data_dir / "postgres" / "postmaster.pid").read_text().splitlines()[4]
    url = f"postgresql://postgres:@/tokendance?host={socket_dir}"
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT notification_id FROM tokendance_events ORDER BY 1")
        return [int(r[0]) for r in rows.fetchall()]


def stream_ids(port: int) -> list[int]:
    return asyncio.run(stream_notification_ids(f"nats://127.0.0.1:{port}", "TOKENDANCE"))
