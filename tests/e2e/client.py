"""A client of the API for end-to-end tests: a real server, HTTP and SSE."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.fork_server import Process, spawn
from tests.waiting import eventually

E2E_JWT_SECRET = "e2e-secret-" + "x" * 32  # every e2e server signs with it


@dataclass(frozen=True)
class SseEvent:
    event: str
    data: dict[str, object]
    id: int | None


def parse_sse(lines: Iterator[str]) -> Iterator[SseEvent]:
    """Server-Sent Events from a line iterator (comments and retry lines skipped)."""
    event, event_id = "message", None
    data: list[str] = []
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
    """`tokendance serve` (or another role) on real Postgres and NATS, as its own process."""

    database_url: str
    nats_url: str
    stream: str
    data_dir: Path
    script: Path | None = None
    port: int = field(default_factory=free_port)
    process: Process | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    stderr: Path | None = None  # where the server's stderr goes (default: the test's)
    role: str = "serve"  # or api, worker, relay, projections

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
            TOKENDANCE_JWT_SECRET=E2E_JWT_SECRET,
            TOKENDANCE_LOG_LEVEL="WARNING",
        )
        env.update(self.extra_env)  # may override any of the above
        if self.script is not None:
            env["TOKENDANCE_LLM"] = f"scripted:{self.script}"
        with contextlib.ExitStack() as files:
            err = files.enter_context(self.stderr.open("ab")) if self.stderr else None
            http = self.role in ("serve", "api")
            args = [self.role, "--port", str(self.port)] if http else [self.role]
            self.process = spawn(args, env, stderr=err)
        if not http:
            return self  # no HTTP to ask: what it is for waits in NATS until it takes it
        process = self.process

        def answering() -> bool:
            if process.poll() is not None:
                raise RuntimeError(f"server exited with {process.returncode}")
            try:
                return httpx.get(f"{self.url}/health", timeout=1).status_code == 200
            except httpx.HTTPError:
                return False

        eventually(answering, timeout=60, what=f"{self.url}/health to answer", interval=0.1)
        return self

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


# -- additions for the HTTP/SSE end-to-end suites --------------------------------

ERROR_KEYS = {"detail", "error_code", "timestamp"}


sign_up = register  # the name the HTTP suites use


def assert_error(
    response: httpx.Response, status: int | tuple[int, ...], code: str | None = None
) -> dict[str, object]:
    """The response is an error of that status in the `{detail, error_code, timestamp}` format."""
    statuses = (status,) if isinstance(status, int) else status
    where = f"{response.request.method} {response.request.url}"
    assert response.status_code in statuses, f"{where}: {response.status_code} {response.text}"
    body = response.json()
    assert isinstance(body, dict) and body.keys() >= ERROR_KEYS, f"{where}: {body}"
    assert isinstance(body["detail"], str) and body["detail"], f"{where}: {body}"
    assert isinstance(body["error_code"], str) and body["error_code"], f"{where}: {body}"
    assert isinstance(body["timestamp"], str) and body["timestamp"], f"{where}: {body}"
    if code is not None:
        assert body["error_code"] == code, f"{where}: {body}"
    return body


class SseTimeout(AssertionError):
    """The stream did not reach the wanted point in time; carries what was read."""

    def __init__(self, message: str, events: list[SseEvent]) -> None:
        super().__init__(f"{message}; read so far: {[(e.id, e.event) for e in events]}")
        self.events = events


@dataclass
class SseRead:
    """What one SSE request gave: status, headers, the events read, the body if not SSE."""

    status: int
    headers: httpx.Headers
    events: list[SseEvent]
    body: bytes = b""
    ended: bool = False  # the server closed the stream (rather than us stopping)

    @property
    def stored(self) -> list[SseEvent]:
        """The events with an id (stored events), in the order received."""
        return [e for e in self.events if e.id is not None]

    @property
    def ids(self) -> list[int]:
        return [e.id for e in self.events if e.id is not None]

    def of(self, event: str) -> list[SseEvent]:
        return [e for e in self.events if e.event == event]

    def json(self) -> object:
        return json.loads(self.body)


def read_sse(
    http: httpx.Client,
    method: str,
    url: str,
    *,
    until: Callable[[SseEvent], bool] | None = None,
    stored: int | None = None,
    timeout: float = 20.0,
    **kwargs: object,
) -> SseRead:
    """Open an SSE request and read it until `until(event)` holds, `stored` events with an
    id have arrived, or the server closes the stream (neither given); then disconnect.

    Raises `SseTimeout` when that takes longer than `timeout` seconds. A non-200 answer
    is returned with its body and no events.
    """
    deadline = time.monotonic() + timeout
    events: list[SseEvent] = []
    # A quiet run sends a keep-alive every 15 s: a read waits past two of them.
    request_timeout = httpx.Timeout(timeout, read=min(timeout, 40.0))
    with http.stream(method, url, timeout=request_timeout, **kwargs) as response:  # type: ignore[arg-type]
        if response.status_code != 200:
            return SseRead(response.status_code, response.headers, [], response.read())
        assert response.headers["content-type"].startswith("text/event-stream")

        def lines() -> Iterator[str]:
            try:
                for line in response.iter_lines():
                    if time.monotonic() > deadline:
                        raise SseTimeout(f"{method} {url}: no end after {timeout}s", events)
                    yield line
            except httpx.ReadTimeout:
                raise SseTimeout(f"{method} {url}: the stream went quiet", events) from None

        seen = 0
        for event in parse_sse(lines()):
            events.append(event)
            if event.id is not None:
                seen += 1
            if (until is not None and until(event)) or (stored is not None and seen >= stored):
                return SseRead(response.status_code, response.headers, events)
        if until is not None or stored is not None:
            raise SseTimeout(f"{method} {url}: the server closed the stream early", events)
        return SseRead(response.status_code, response.headers, events, ended=True)


def is_event(*names: str) -> Callable[[SseEvent], bool]:
    """A `read_sse(until=...)` predicate: an event of one of these SSE types."""
    return lambda e: e.event in names


def wait_until(
    check: Callable[[], object], timeout: float = 10.0, interval: float = 0.05
) -> object:
    """Poll `check` until it returns something truthy; that value (AssertionError naming
    the check on timeout: `tests.waiting.eventually`, with the e2e suites' default)."""
    return eventually(check, timeout=timeout, interval=interval)


def settled(http: httpx.Client) -> int:
    """Wait until the relay and every read model have applied the log's head as it is
    now (a known notification id, returned). A test that asserts nothing changed waits
    for this first: whatever a refused command had written would show by then."""
    head = int(http.get("/health").json()["head"])

    def caught_up() -> bool:
        health = http.get("/health").json()
        relay = health["relay"] or {"position": head}
        # A lag is against the log the view reads (the accounts view reads another
        # log), and none at a moment after `head` was read means `head` was applied.
        return relay["position"] >= head and all(p["lag"] == 0 for p in health["projections"])

    wait_until(caught_up, timeout=30)
    return head
