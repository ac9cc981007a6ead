"""Chat messages run to `done` per second: one `serve` process against the roles split
into processes (one `api`, N `worker`s, one `relay`, one `projections`) on one machine.

Both layouts run in one invocation, one after the other, each on fresh embedded
Postgres and NATS (or TOKENDANCE_DATABASE_URL / _NATS_URL, with a new database and
stream each), with the scripted model of `bench.chat_accept` (one short answer per
message). After a warm-up on sessions of its own, many sessions talk at once, each
sending its messages one after another (POST /api/v1/chat/{id}/message; a message is
completed when the run's `done` event arrives on that response). For each layout and
round it prints messages completed per second, p50/p99 POST -> done latency, and the
CPU seconds per message of every server process (Postgres: the postmaster and all its
backends; NATS; each TokenDance process) and of this load-generating process, summed
over the server processes. On a machine of C cores no layout completes more than
C / (CPU seconds per message) messages per second, whatever the number of processes.

python -m bench.scale_out [--sessions 100] [--messages 10] [--workers 2]
                          [--layouts serve,split] [--rounds 1]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench.api_harness import (
    NO_LIMITS,
    Account,
    api_stack,
    cpu_seconds,
    create_sessions,
    free_port,
    machine,
    register,
    server_env,
)
from bench.chat_accept import Tally, drive, write_script
from bench.harness import fresh_servers, percentile


@dataclass
class RoleProcess:
    """`tokendance ROLE` as its own process (`port` for the roles that serve HTTP)."""

    role: str
    name: str
    env: dict[str, str]
    port: int | None = None
    process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> RoleProcess:
        port = ["--port", str(self.port)] if self.port is not None else []
        self.process = subprocess.Popen(
            [sys.executable, "-m", "adapters.cli", self.role, *port], env=self.env
        )
        return self

    def check(self) -> None:
        assert self.process is not None
        if self.process.poll() is not None:
            raise RuntimeError(f"{self.name} exited with {self.process.returncode}")

    def wait_for_health(self, seconds: float = 60) -> None:
        """Until GET /health answers 200 (the tables exist, Postgres answers)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.check()
            try:
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"{self.name} did not answer /health")

    def wait_for_nats(self, nats_url: str, seconds: float = 60) -> bool:
        """Until the process holds a connection to NATS (its bootstrap, which creates the
        tables, is over); False if it exited first."""
        port = int(nats_url.rsplit(":", 1)[1])
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                return False
            if port in _remote_ports(self.pid):
                return True
            time.sleep(0.1)
        raise RuntimeError(f"{self.name} did not connect to NATS")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _remote_ports(pid: int) -> set[int]:
    """The remote ports of a process's established IPv4 TCP connections."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    ports = set()
    for line in Path(f"/proc/{pid}/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        if fields[9] in inodes and fields[3] == "01":  # ESTABLISHED
            ports.add(int(fields[2].rsplit(":", 1)[1], 16))
    return ports


def _children(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[1]) == parent:
                found.append(int(entry.name))
    return found


def one(pid: int) -> Callable[[], list[int]]:
    return lambda: [pid]


def _cpu_of(pids: list[int]) -> dict[int, float]:
    used = {}
    for pid in pids:
        with contextlib.suppress(OSError):  # ended meanwhile
            used[pid] = cpu_seconds(pid)
    return used


def embedded_pids(root: Path) -> dict[str, Callable[[], list[int]]]:
    """The embedded servers' processes under `root`, as functions (backends come and go)."""
    found: dict[str, Callable[[], list[int]]] = {}
    postmaster = root / "postgres" / "postmaster.pid"
    if postmaster.exists():
        pid = int(postmaster.read_text().split("\n", 1)[0])
        found["postgres"] = lambda: [pid, *_children(pid)]
    nats_dir = str(root / "nats")
    for entry in Path("/proc").iterdir():
        try:
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if entry.name.isdigit() and "nats-server" in cmdline and nats_dir in cmdline:
            found["nats"] = one(int(entry.name))
    return found


@dataclass
class Processes:
    """CPU seconds processes use over a window; each name stands for one or more pids
    (a process that starts in the window counts from zero, one that ends is lost)."""

    groups: dict[str, Callable[[], list[int]]]
    start: dict[str, dict[int, float]] = field(default_factory=dict)

    def begin(self) -> None:
        self.start = {name: _cpu_of(pids()) for name, pids in self.groups.items()}

    def used(self) -> dict[str, float]:
        used = {}
        for name, pids in self.groups.items():
            now, before = _cpu_of(pids()), self.start[name]
            used[name] = sum(cpu - before.get(pid, 0.0) for pid, cpu in now.items())
        return used


@dataclass
class Layout:
    """A running layout: where to send the chat, and its processes by name."""

    name: str
    url: str
    processes: dict[str, Callable[[], list[int]]]


@contextmanager
def serve_layout(script: Path) -> Iterator[Layout]:
    with api_stack(script=script) as stack:
        pid = stack.server.pid
        groups = {"serve": one(pid), **embedded_pids(stack.root)}
        yield Layout("one `serve` process", stack.server.url, groups)


@contextmanager
def split_layout(script: Path, workers: int) -> Iterator[Layout]:
    """One api, `workers` workers, one relay, one projections, on the same servers."""
    with fresh_servers("scaleout") as fresh, ExitStack() as running:
        env = server_env(
            fresh.database_url,
            fresh.nats_url,
            fresh.stream,
            fresh.root / "roles",
            script,
            NO_LIMITS,
        )
        api = RoleProcess("api", "api", env, port=free_port()).start()
        running.callback(api.stop)
        api.wait_for_health()  # the tables exist: the others find them
        roles = [api]
        names = ["relay", "projections"] + [f"worker-{n + 1}" for n in range(workers)]
        for name in names:  # one at a time: creating tables at once can fail
            role = RoleProcess(name.split("-")[0], name, env)
            for _ in range(3):  # a start that lost such a race is tried again
                role.start()
                if role.wait_for_nats(fresh.nats_url):
                    break
            role.check()
            running.callback(role.stop)
            roles.append(role)
        groups = {r.name: one(r.pid) for r in roles}
        label = f"split: 1 api, {workers} workers, 1 relay, 1 projections"
        yield Layout(label, api.url, {**groups, **embedded_pids(fresh.root)})


@dataclass(frozen=True)
class Round:
    tally: Tally
    seconds: float
    cpu: dict[str, float]  # CPU seconds by process, in the window


def measure(url: str, account: Account, sessions: int, messages: int, groups: Processes) -> Round:
    with httpx.Client(base_url=url, timeout=30) as http:
        ids = create_sessions(http, account, sessions)
    groups.begin()
    started = time.perf_counter()
    tally = asyncio.run(drive(url, account, ids, messages))
    seconds = (max(tally.completed) if tally.completed else time.perf_counter()) - started
    return Round(tally, seconds, groups.used())


def report(layout: str, rnd: Round) -> None:
    tally, completed = rnd.tally, len(rnd.tally.completed)
    n = max(completed, 1)
    rate = completed / rnd.seconds
    servers = {k: v for k, v in rnd.cpu.items() if k != "client"}
    server_cpu = sum(servers.values())
    cores = os.cpu_count() or 1
    print(f"  {layout}")
    print(
        f"    completed {completed} runs in {rnd.seconds:.1f} s = {rate:.1f} messages/s; "
        f"POST -> done p50 {percentile(tally.complete_ms, 50):.0f} ms, "
        f"p99 {percentile(tally.complete_ms, 99):.0f} ms; "
        f"refused or failed: {tally.refused or 'none'}"
    )
    print(
        f"    server CPU per message, all server processes: {server_cpu / n * 1000:.1f} ms "
        f"({server_cpu / rnd.seconds:.2f} cores busy); with the load generator "
        f"{sum(rnd.cpu.values()) / n * 1000:.1f} ms -> at most "
        f"{cores / (sum(rnd.cpu.values()) / n):.0f} messages/s on {cores} cores"
    )
    for name, used in rnd.cpu.items():
        print(
            f"      {name:<12} {used / n * 1000:6.2f} ms/message  "
            f"{used / rnd.seconds:5.2f} cores  ({used:.1f} CPU s)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=100, help="sessions talking at once")
    parser.add_argument("--messages", type=int, default=10, help="messages per session")
    parser.add_argument("--workers", type=int, default=2, help="worker processes (split)")
    parser.add_argument("--layouts", default="serve,split", help="serve, split or both")
    parser.add_argument("--rounds", type=int, default=1, help="measurements per layout")
    parser.add_argument("--warmup", type=int, default=20, help="warm-up sessions (x 3 messages)")
    options = parser.parse_args()
    print(f"{datetime.datetime.now().isoformat(timespec='seconds')}; {machine()}")
    print(
        f"{options.sessions} sessions at once x {options.messages} messages each, in turn; "
        f"warm-up {options.warmup} sessions x 3 messages"
    )
    with tempfile.TemporaryDirectory(prefix="tokendance-scaleout-") as scratch:
        script = write_script(Path(scratch), options.messages + 5)
        for which in [w.strip() for w in options.layouts.split(",")]:
            layout_of = (
                serve_layout(script) if which == "serve" else split_layout(script, options.workers)
            )
            with layout_of as layout:
                groups = Processes({**layout.processes, "client": one(os.getpid())})
                with httpx.Client(base_url=layout.url, timeout=30) as http:
                    account = register(http, f"{which}@bench.example")
                    warm_ids = create_sessions(http, account, options.warmup)
                warm = asyncio.run(drive(layout.url, account, warm_ids, 3))
                assert len(warm.completed) == 3 * options.warmup, warm.refused
                print(f"{layout.name} (load average {os.getloadavg()[0]:.2f} after warm-up)")
                for r in range(options.rounds):
                    rnd = measure(layout.url, account, options.sessions, options.messages, groups)
                    report(f"round {r + 1}", rnd)


if __name__ == "__main__":
    main()
