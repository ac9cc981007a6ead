"""A client of the API for end-to-end tests: a real server, HTTP and SSE."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx


@dataclass(frozen=True)
class SseEvent:
    event: str
    data: dict[str, object]
    id: int | None


def parse_sse(lines: Iterator[str]) -> Iterator[SseEvent]:
    """Server-Sent Events from a line iterator (comments and retry lines skipped)."""
    event, data, event_id = "message", [], None
    for line in lines:
        if line == "":
            if data:
                yield SseEvent(event, json.loads("\n".join(data)), event_id)
            event, data, event_id = "message", [], None
        elif line.startswith(":") or line.startswith("retry:"):
            continue
        elif line.startswith("event:"):
            event = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].strip())
        elif line.startswith("id:"):
            event_id = int(line[3:].strip())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    """`tokendance serve` on real Postgres and NATS, as its own process."""

    database_url: str
    nats_url: str
    stream: str
    data_dir: Path
    script: Path | None = None
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Server:
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("TOKENDANCE_", "ANTHROPIC_"))
        }
        env.update(
            TOKENDANCE_DATABASE_URL=self.database_url,
            TOKENDANCE_NATS_URL=self.nats_url,
            TOKENDANCE_NATS_STREAM=self.stream,
            TOKENDANCE_DATA_DIR=str(self.data_dir),
            TOKENDANCE_JWT_SECRET="e2e-secret-" + "x" * 32,
            TOKENDANCE_LOG_LEVEL="WARNING",
            **self.extra_env,
        )
        if self.script is not None:
            env["TOKENDANCE_LLM"] = f"scripted:{self.script}"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "adapters.cli", "serve", "--port", str(self.port)], env=env
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode}")
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError("server did not answer /health")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def client(self, token: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)


def register(
    http: httpx.Client, email: str, password: str = "correct horse battery"
) -> dict[str, object]:
    """Register and log in; the login body plus the registration's ids."""
    created = http.post(
        "/api/v1/auth/register",
        json={"email": email, "password": password, "name": email.split("@")[0]},
    )
    assert created.status_code == 201, created.text
    tokens = http.post("/api/v1/auth/login", json={"email": email, "password": password})
    assert tokens.status_code == 200, tokens.text
    return {**created.json(), **tokens.json()}
