"""Shared set-up for the API benchmarks: `tokendance serve` as its own process on
embedded servers, accounts and sessions over HTTP, and what a process costs (CPU,
memory) while it runs.

The SSE readers and the writer at a controlled rate are in `bench.sse_watch`.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from uuid import UUID

import httpx

from adapters.bootstrap import bootstrap
from adapters.config.env_vars import DOCUMENTED
from adapters.config.settings import Settings
from adapters.container import Container
from bench.harness import fresh_servers

JWT_SECRET = "bench-secret-" + "x" * 32
PASSWORD = "correct horse battery"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def raise_fd_limit() -> int:
    """Raise this process's open-file limit to its hard limit; the new soft limit."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def rss_kib(pid: int) -> int:
    """A process's resident set (VmRSS), in KiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system, all threads) a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _machine_busy() -> float:
    """CPU seconds all cores have spent busy since boot (/proc/stat)."""
    ticks = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = ticks[3] + ticks[4]  # idle + iowait
    return (sum(ticks[:8]) - idle) / os.sysconf("SC_CLK_TCK")


class CpuWindow:
    """CPU used while measuring, in cores: the whole machine's and some processes'."""

    def __init__(self, **pids: int) -> None:
        self.pids = pids
        self.started = time.perf_counter()
        self.machine = _machine_busy()
        self.used = {name: cpu_seconds(pid) for name, pid in pids.items()}

    def report(self) -> str:
        seconds = time.perf_counter() - self.started
        machine = (_machine_busy() - self.machine) / seconds
        ours = ", ".join(
            f"{name} {(cpu_seconds(pid) - self.used[name]) / seconds:.2f}"
            for name, pid in self.pids.items()
        )
        return (
            f"CPU while measuring, in cores: machine {machine:.2f} of {os.cpu_count()}; "
            f"{ours} (the rest: Postgres, NATS, anything else on the machine)"
        )


# A benchmark measures the server, not its per-user limits: they are raised out of the way.
NO_LIMITS = {
    "TOKENDANCE_RATE_LIMIT_PER_MINUTE": "10000000",
    "TOKENDANCE_MAX_STREAMS_PER_USER": "1000000",
}


def raised_limits() -> str:
    """The limits this run raises, as far as the product knows them."""
    known = [f"{k}={v}" for k, v in NO_LIMITS.items() if k in DOCUMENTED]
    return ", ".join(known) or "none (the product has no such settings)"


def machine() -> str:
    load = os.getloadavg()[0]
    return f"cores: {os.cpu_count() or 1} (load average {load:.2f} at start)"


def server_env(
    database_url: str,
    nats_url: str,
    stream: str,
    data_dir: Path,
    script: Path | None = None,
    extra_env: dict[str, str] | None = None,
) -> dict[str, str]:
    """The environment of a `tokendance` server process on these servers: this process's
    own without any TOKENDANCE_ or ANTHROPIC_ variable, then the given settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOKENDANCE_", "ANTHROPIC_"))}
    env.update(
        TOKENDANCE_DATABASE_URL=database_url,
        TOKENDANCE_NATS_URL=nats_url,
        TOKENDANCE_NATS_STREAM=stream,
        TOKENDANCE_DATA_DIR=str(data_dir),
        TOKENDANCE_JWT_SECRET=JWT_SECRET,
        TOKENDANCE_LOG_LEVEL="WARNING",
        **(extra_env or {}),
    )
    if script is not None:
        env["TOKENDANCE_LLM"] = f"scripted:{script}"
    return env


@dataclass
class ApiServer:
    """`tokendance serve` on the given Postgres and NATS, as its own process."""

    database_url: str
    nats_url: str
    stream: str
    data_dir: Path
    script: Path | None = None
    extra_env: dict[str, str] = field(default_factory=dict)
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def start(self) -> ApiServer:
        env = server_env(
            self.database_url,
            self.nats_url,
            self.stream,
            self.data_dir,
            self.script,
            self.extra_env,
        )
        self.process = subprocess.Popen(
            [sys.executable, "-m", "adapters.cli", "serve", "--port", str(self.port)], env=env
        )
        self._wait_until_relaying()
        return self

    def _wait_until_relaying(self) -> None:
        assert self.process is not None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode}")
            try:
                health = httpx.get(f"{self.url}/health", timeout=1)
                relay = health.json().get("relay") if health.status_code == 200 else None
                if relay and relay["active"]:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError("server did not answer /health with an active relay")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@dataclass
class Stack:
    """Embedded servers, a fresh database and stream, and the API server over them."""

    root: Path
    database_url: str
    nats_url: str
    stream: str
    server: ApiServer

    def store(self) -> Container:
        """The event store and read models, opened in this process (close it after)."""
        settings = Settings(nats_stream=self.stream, data_dir=self.root, jwt_secret=JWT_SECRET)
        return bootstrap(settings, database_url=self.database_url, nats_url=self.nats_url).container


@contextmanager
def api_stack(*, script: Path | None = None, env: dict[str, str] | None = None) -> Iterator[Stack]:
    """A running API server on fresh embedded servers (or TOKENDANCE_DATABASE_URL / _NATS_URL)."""
    with fresh_servers("apibench") as fresh:
        server = ApiServer(
            fresh.database_url,
            fresh.nats_url,
            fresh.stream,
            fresh.root / "serve",
            script=script,
            extra_env={**NO_LIMITS, **(env or {})},
        )
        try:
            yield Stack(
                fresh.root, fresh.database_url, fresh.nats_url, fresh.stream, server.start()
            )
        finally:
            server.stop()


@dataclass(frozen=True)
class Account:
    user_id: UUID
    workspace_id: UUID
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}


def register(http: httpx.Client, email: str) -> Account:
    """Register and log in (argon2: about a tenth of a second each)."""
    body = {"email": email, "password": PASSWORD, "name": email.split("@")[0]}
    created = http.post("/api/v1/auth/register", json=body)
    assert created.status_code == 201, created.text
    login = http.post("/api/v1/auth/login", json={"email": email, "password": PASSWORD})
    assert login.status_code in (200, 201), login.text
    c = created.json()
    return Account(UUID(c["user_id"]), UUID(c["workspace_id"]), login.json()["access_token"])


def create_sessions(http: httpx.Client, account: Account, n: int) -> list[UUID]:
    ids = []
    for i in range(n):
        r = http.post(
            "/api/v1/sessions",
            json={"workspace_id": str(account.workspace_id), "title": f"bench {i}"},
            headers=account.headers,
        )
        assert r.status_code == 201, r.text
        ids.append(UUID(r.json()["id"]))
    return ids
