"""Shared set-up for the API benchmarks: `tokendance serve` as its own process on
embedded servers, accounts and sessions over HTTP, and the event store opened here
to write events at a controlled rate.

The SSE readers run in a process of their own (`Watcher`, which runs this module),
so load, server and readers never share a GIL; perf_counter is CLOCK_MONOTONIC, one
clock for every process.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from uuid import UUID

import httpx

from adapters.bootstrap import bootstrap
from adapters.container import Container
from adapters.env_vars import DOCUMENTED
from adapters.settings import Settings
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


Commit = tuple[int, int, float]  # (session index, version, perf_counter after commit)


def produce(
    c: Container, sessions: list[UUID], rate: float, seconds: float, threads: int = 4
) -> list[Commit]:
    """Append user messages round-robin over `sessions` at `rate` per second in total.

    Each of `threads` writers owns every `threads`-th session and keeps its own
    schedule, so one slow commit does not delay the others' events.
    """
    threads = min(threads, len(sessions))
    commits: list[Commit] = []
    lock = threading.Lock()
    start = time.perf_counter() + 0.05
    stop_at = start + seconds

    def write(k: int) -> None:
        mine = list(range(k, len(sessions), threads))
        interval = threads / rate
        next_at, n = start + k / rate, 0
        while next_at < stop_at:
            time.sleep(max(0.0, next_at - time.perf_counter()))
            index = mine[n % len(mine)]
            receipt = c.sessions.append_user_message(sessions[index], f"event {n}")
            done = time.perf_counter()
            with lock:
                commits.append((index, receipt.version, done))
            next_at, n = next_at + interval, n + 1

    workers = [threading.Thread(target=write, args=(k,)) for k in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return commits


def delays_ms(
    commits: list[Commit], arrivals: dict[tuple[int, int], float], watchers: list[int]
) -> tuple[list[float], int]:
    """Commit-to-arrival delays over every (stream, event) pair, and how many never came.

    `watchers[s]` is the session index stream `s` watches; `arrivals` maps
    (stream, version) to when its `id:` line arrived.
    """
    by_session: dict[int, list[int]] = {}
    for s, session in enumerate(watchers):
        by_session.setdefault(session, []).append(s)
    delays, missing = [], 0
    for session, version, committed in commits:
        for s in by_session.get(session, []):
            arrived = arrivals.get((s, version))
            if arrived is None:
                missing += 1
            else:
                delays.append((arrived - committed) * 1000)
    return delays, missing


@dataclass(frozen=True)
class Watched:
    """What a `Watcher` saw: arrival times by (stream, version), and what went wrong."""

    arrivals: dict[tuple[int, int], float]
    failures: list[str]
    ended: int


class Watcher:
    """SSE session streams held open by a process of its own, noting when each `id:` arrives.

    Returns from the constructor once every stream has delivered its first stored
    event (so it is subscribed and caught up) or failed.
    """

    def __init__(self, url: str, streams: list[tuple[UUID, str]], open_concurrency: int = 50):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.api_harness", "watch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        config = {"url": url, "streams": [[str(s), t] for s, t in streams]}
        self.process.stdin.write(json.dumps({**config, "open_concurrency": open_concurrency}))
        self.process.stdin.write("\n")
        self.process.stdin.flush()
        opened = json.loads(self.process.stdout.readline())
        self.ready, self.open_seconds = int(opened["ready"]), float(opened["seconds"])
        self.failures: list[str] = opened["failures"]

    @property
    def pid(self) -> int:
        return self.process.pid

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def stop(self) -> Watched:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("stop\n")
        self.process.stdin.flush()
        out = json.loads(self.process.stdout.read())
        self.process.wait(30)
        arrivals = {(s, v): t for s, v, t in out["arrivals"]}
        return Watched(arrivals, self.failures + out["failures"], int(out["ended"]))


class _Streams:
    """The reader process's side of a `Watcher` (see `watch_main`)."""

    def __init__(self, url: str, streams: list[list[str]], open_concurrency: int) -> None:
        self.url, self.streams = url, streams
        self.arrivals: list[tuple[int, int, float]] = []
        self.failures: list[str] = []
        self.settled, self.ended = 0, 0
        self.all_settled = asyncio.Event()
        self.gate = asyncio.Semaphore(open_concurrency)  # opens at most this many at a time

    def _settle(self) -> None:
        self.gate.release()
        self.settled += 1
        if self.settled == len(self.streams):
            self.all_settled.set()

    async def follow(self, http: httpx.AsyncClient, s: int) -> None:
        session_id, token = self.streams[s]
        await self.gate.acquire()
        opening = True
        try:
            path = f"/api/v1/sessions/{session_id}/stream"
            async with http.stream("GET", path, headers={"Authorization": f"Bearer {token}"}) as r:
                if r.status_code != 200:
                    self.failures.append(f"HTTP {r.status_code}: {(await r.aread())[:200]!r}")
                    return
                async for line in r.aiter_lines():
                    if line.startswith("id:"):
                        self.arrivals.append((s, int(line[3:]), time.perf_counter()))
                        if opening:
                            opening = False
                            self._settle()
                self.ended += 1
        except httpx.HTTPError as e:
            self.failures.append(f"{type(e).__name__}: {e}")
        finally:
            if opening:
                self._settle()

    async def run(self) -> None:
        """Open all, report, hold them until "stop" arrives on stdin, report what came."""
        raise_fd_limit()
        n = len(self.streams)
        limits = httpx.Limits(max_connections=n + 10, max_keepalive_connections=0)
        timeout = httpx.Timeout(60.0, read=None)  # keep-alives come every 15 s
        async with httpx.AsyncClient(base_url=self.url, limits=limits, timeout=timeout) as http:
            started = time.perf_counter()
            tasks = [asyncio.create_task(self.follow(http, s)) for s in range(n)]
            await self.all_settled.wait()
            ready = len({s for s, _, _ in self.arrivals})
            seconds = time.perf_counter() - started
            print(json.dumps({"ready": ready, "seconds": seconds, "failures": self.failures}))
            sys.stdout.flush()
            self.failures = []
            await asyncio.to_thread(sys.stdin.readline)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        print(
            json.dumps({"arrivals": self.arrivals, "failures": self.failures, "ended": self.ended})
        )


def watch_main() -> None:
    config = json.loads(sys.stdin.readline())
    asyncio.run(_Streams(config["url"], config["streams"], config["open_concurrency"]).run())


if __name__ == "__main__" and sys.argv[1:] == ["watch"]:
    watch_main()
