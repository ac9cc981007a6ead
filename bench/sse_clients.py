"""1000 concurrent SSE clients on one API process: memory per stream, delivery p50/p99.

`tokendance serve` runs as its own process; a reader process holds 1000 session
streams open (10 on each of 100 sessions, all one user's, limits raised); this
process then writes a burst of events into those sessions through the event store
(20 each, at a modest rate) and the delay from each commit to the arrival of its
`id:` line is taken on every stream that watches the session.

Memory per stream is the server's VmRSS with the streams open minus VmRSS before
(after a warm-up with one stream per session), divided by the number of streams.
The NATS subscriptions the server holds on the sessions' subjects come from the
monitoring endpoint of a nats-server started here (skipped with TOKENDANCE_NATS_URL).

python -m bench.sse_clients [--clients 1000] [--sessions 100] [--events 20] [--rate 20]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from uuid import UUID

import httpx

from adapters.processes.embedded_nats import nats_server_binary
from bench.api_harness import (
    CpuWindow,
    Stack,
    api_stack,
    cpu_seconds,
    create_sessions,
    free_port,
    machine,
    raised_limits,
    register,
    rss_kib,
)
from bench.harness import percentile
from bench.sse_watch import Commit, Watcher, delays_ms, produce

SETTLE = 2.0  # seconds: let the server finish opening streams / delivering


def warm_up(stack: Stack, sessions: list[UUID], token: str) -> None:
    """One stream per session and a few events, so first-use costs fall before 'before'."""
    watcher = Watcher(stack.server.url, [(s, token) for s in sessions])
    container = stack.store()
    try:
        produce(container, sessions, rate=50, seconds=0.5)
        time.sleep(0.5)
        watcher.stop()
    finally:
        watcher.kill()
        container.close()


@contextmanager
def monitored_nats() -> Iterator[str | None]:
    """A nats-server with its monitoring port, used by the stack; yields the monitor URL.

    None (and the stack's own NATS) when TOKENDANCE_NATS_URL names one already.
    """
    if "TOKENDANCE_NATS_URL" in os.environ:
        yield None
        return
    port, monitor = free_port(), free_port()
    with tempfile.TemporaryDirectory(prefix="tokendance-sse-nats-") as root:
        cmd = [
            nats_server_binary(), "-js", "-sd", root, "-a", "127.0.0.1", "-p", str(port),
            "-m", str(monitor), "-l", str(Path(root) / "nats.log"),
        ]  # fmt: skip
        process = subprocess.Popen(cmd, start_new_session=True)
        url = f"http://127.0.0.1:{monitor}"
        try:
            _wait_for(url)
            os.environ["TOKENDANCE_NATS_URL"] = f"nats://127.0.0.1:{port}"
            yield url
        finally:
            os.environ.pop("TOKENDANCE_NATS_URL", None)
            process.terminate()
            process.wait(10)


def _wait_for(url: str) -> None:
    deadline = time.monotonic() + 15
    while True:
        try:
            httpx.get(f"{url}/healthz", timeout=1).raise_for_status()
            return
        except httpx.HTTPError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def session_subscriptions(monitor: str | None, sessions: list[UUID]) -> Counter[UUID] | None:
    """NATS subscriptions on each session's subjects, over every client connection."""
    if monitor is None:
        return None
    connz = httpx.get(f"{monitor}/connz", params={"subs": "detail", "limit": 100000}, timeout=10)
    by_id = {str(s): s for s in sessions}
    found: Counter[UUID] = Counter()
    for connection in connz.json().get("connections") or []:
        for sub in connection.get("subscriptions_list_detail") or []:
            session = by_id.get(sub["subject"].rsplit(".", 1)[-1])
            if session is not None:
                found[session] += 1
    return found


def subscriptions_line(open_: Counter[UUID] | None, closed: Counter[UUID] | None) -> str:
    if open_ is None or closed is None:
        return "NATS subscriptions: not counted (no monitoring endpoint on TOKENDANCE_NATS_URL)"
    most = max(open_.values(), default=0)
    return (
        f"NATS subscriptions on the sessions' subjects: {open_.total()} with the streams open "
        f"({len(open_)} sessions, at most {most} per session); "
        f"{closed.total()} once they closed"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=1000)
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--events", type=int, default=20, help="per session")
    parser.add_argument("--rate", type=float, default=20, help="events per second in total")
    options = parser.parse_args()
    print(machine())
    print(f"server limits raised: {raised_limits()}")
    with monitored_nats() as monitor, api_stack() as stack:
        with httpx.Client(base_url=stack.server.url, timeout=30) as http:
            account = register(http, "clients@bench.example")
            sessions = create_sessions(http, account, options.sessions)
        warm_up(stack, sessions, account.token)
        time.sleep(SETTLE)
        before = rss_kib(stack.server.pid)
        watchers = [i % len(sessions) for i in range(options.clients)]
        watcher = Watcher(stack.server.url, [(sessions[i], account.token) for i in watchers])
        container = stack.store()
        try:
            time.sleep(SETTLE)
            opened = rss_kib(stack.server.pid)
            subscribed = session_subscriptions(monitor, sessions)
            reader = rss_kib(watcher.pid)
            seconds = options.events * len(sessions) / options.rate
            cpu = CpuWindow(server=stack.server.pid, reader=watcher.pid, producer=os.getpid())
            server_cpu = cpu_seconds(stack.server.pid)
            commits = produce(container, sessions, options.rate, seconds)
            cpu_used = cpu.report()
            time.sleep(SETTLE)
            server_cpu = cpu_seconds(stack.server.pid) - server_cpu
            after = rss_kib(stack.server.pid)
            watched = watcher.stop()
            time.sleep(SETTLE)
            unsubscribed = session_subscriptions(monitor, sessions)
        finally:
            watcher.kill()
            container.close()
    n = watcher.ready
    print(
        f"streams open: {n} of {options.clients} over {len(sessions)} sessions "
        f"in {watcher.open_seconds:.1f} s ({n / watcher.open_seconds:.0f} opened/s); "
        f"errors: {len(watched.failures)}{' ' + watched.failures[0] if watched.failures else ''}"
    )
    print(
        f"server RSS: {before / 1024:.1f} MiB before, {opened / 1024:.1f} MiB with the streams "
        f"open, {after / 1024:.1f} MiB after the burst"
    )
    print(
        f"server memory per open stream: {(opened - before) / n:.1f} KiB "
        f"({(after - before) / n:.1f} KiB after the burst); reader process: {reader / 1024:.0f} MiB"
    )
    delays, missing = delays_ms(commits, watched.arrivals, watchers)
    print(
        f"commit -> each of {n} clients, {len(commits)} events at {len(commits) / seconds:.0f}/s "
        f"({len(delays)} deliveries, {len(delays) / seconds:.0f}/s): "
        f"p50 {percentile(delays, 50):.1f} ms, p99 {percentile(delays, 99):.1f} ms, "
        f"max {max(delays):.1f} ms"
    )
    first, last = fan_out(commits, watched.arrivals, watchers)
    print(
        f"per event, first of its {n // len(sessions)} streams: p50 {percentile(first, 50):.1f} ms,"
        f" p99 {percentile(first, 99):.1f} ms; last: p50 {percentile(last, 50):.1f} ms, "
        f"p99 {percentile(last, 99):.1f} ms"
    )
    print(
        f"deliveries missing: {missing}; streams the server ended: {watched.ended}; "
        f"server CPU per delivery: {server_cpu / max(len(delays), 1) * 1000:.2f} ms"
    )
    print(subscriptions_line(subscribed, unsubscribed))
    print(cpu_used)


def fan_out(
    commits: list[Commit], arrivals: dict[tuple[int, int], float], watchers: list[int]
) -> tuple[list[float], list[float]]:
    """Per event: the delay to the first and to the last of the streams watching it."""
    first, last = [], []
    for session, version, committed in commits:
        times = [
            arrivals[(s, version)]
            for s, watched in enumerate(watchers)
            if watched == session and (s, version) in arrivals
        ]
        if times:
            first.append((min(times) - committed) * 1000)
            last.append((max(times) - committed) * 1000)
    return first, last


if __name__ == "__main__":
    main()
