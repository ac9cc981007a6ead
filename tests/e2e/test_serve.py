"""`tokendance serve` as a newcomer runs it: embedded servers, /health, clean stop."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.integration.test_embedded import wait_gone

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_serve_starts_everything_answers_health_and_stops_cleanly(data_root: Path) -> None:
    data_dir, port = data_root / "serve", free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "adapters.cli",
            "--data-dir",
            str(data_dir),
            "serve",
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline, health = time.monotonic() + 60, None
        while time.monotonic() < deadline and server.poll() is None:
            try:
                health = httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)
                if health.json()["relay"]["active"]:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        assert health is not None and health.status_code == 200
        body = health.json()
        assert body["status"] == "ok"
        assert [p["name"] for p in body["projections"]] == [
            "sessions",
            "working_memory",
            "confirmations",
            "accounts",
            "usage",
            "budgets",
            "artifacts",
            "workspace_files",
            "memories",
            "episodes",
        ]
        postgres_pid = int((data_dir / "postgres" / "postmaster.pid").read_text().split()[0])
    finally:
        server.send_signal(signal.SIGTERM)
        _, errors = server.communicate(timeout=60)
    assert server.returncode == 0, errors
    wait_gone(postgres_pid, "postgres to go with `tokendance serve`")
    assert not (data_dir / "nats" / "server.json").exists()
