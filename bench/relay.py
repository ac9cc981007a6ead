"""Relay throughput, and commit-to-read-model latency at a steady 500 events/s.

python -m bench.relay
"""

from __future__ import annotations

import asyncio
import bisect
import json
import subprocess
import sys
import threading
import time
from uuid import uuid4

from adapters.container import Container
from adapters.system import System
from bench.harness import bench_system, cores, percentile

BACKLOG = 20_000
RATE = 500
SECONDS = 10
PRODUCERS = 4


def fill_backlog(c: Container, n: int) -> None:
    app = c.sessions
    sid = app.start_session(workspace_id=uuid4(), owner_id=uuid4(), title="backlog").session_id
    for _ in range(n // 100):
        session = app.get_session(sid)
        for _ in range(100):
            session.append_user_message("backlog event")
        app.save(session)


async def throughput(system: System) -> None:
    c, services = system.container, system.services
    fill_backlog(c, BACKLOG)
    head = c.recorder.max_notification_id() or 0
    started = time.perf_counter()
    await services.start()
    assert services.relay is not None
    while services.relay.position < head:
        await asyncio.sleep(0.01)
    elapsed = time.perf_counter() - started
    await services.stop()
    print(f"relay throughput: {head:,} events in {elapsed:.2f}s = {head / elapsed:,.0f} events/s")


def produce(
    c: Container, commits: list[tuple[int, float]], stop_at: float, lock: threading.Lock
) -> None:
    app = c.sessions
    sid = app.start_session(workspace_id=uuid4(), owner_id=uuid4(), title="load").session_id
    interval = PRODUCERS / RATE
    next_at = time.perf_counter()
    while next_at < stop_at:
        time.sleep(max(0.0, next_at - time.perf_counter()))
        receipt = app.append_user_message(sid, "steady event")
        done = time.perf_counter()
        with lock:
            commits.append((receipt.notification_id, done))
        next_at += interval


WATCH = """
import json, sys, time, psycopg
with psycopg.connect(sys.argv[1], autocommit=True) as conn:
    conn.execute("LISTEN view_sessions")
    print("listening", flush=True)
    seen, last, deadline = [], -1, time.perf_counter() + float(sys.argv[2])
    while time.perf_counter() < deadline:
        for note in conn.notifies(timeout=0.1):
            now, position = time.perf_counter(), int(note.payload)
            if position > last:
                last = position
                seen.append((last, now))
    print(json.dumps(seen))
"""


def watch(database_url: str, seconds: float) -> subprocess.Popen[str]:
    """A process of its own that notes when the read model reached each position.

    It listens for the view's NOTIFY; perf_counter is CLOCK_MONOTONIC, the same clock
    in every process, so its times compare with the commit times taken here.
    """
    watcher = subprocess.Popen(
        [sys.executable, "-c", WATCH, database_url, str(seconds)], stdout=subprocess.PIPE, text=True
    )
    assert watcher.stdout is not None
    watcher.stdout.readline()
    return watcher


async def latency(c: Container) -> None:
    # The relay and projection run in a process of their own, as in `tokendance
    # serve`; load and measurement here would otherwise share their GIL.
    services = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bench.services_process",
            c.database_url,
            c.nats_url,
            c.settings.nats_stream,
        ],
        stdout=subprocess.PIPE,
    )
    assert services.stdout is not None
    services.stdout.readline()
    commits: list[tuple[int, float]] = []
    lock = threading.Lock()
    watcher = watch(c.database_url, SECONDS + 3)
    stop_at = time.perf_counter() + SECONDS
    producers = [
        threading.Thread(target=produce, args=(c, commits, stop_at, lock)) for _ in range(PRODUCERS)
    ]
    for p in producers:
        p.start()
    for p in producers:
        await asyncio.to_thread(p.join)
    out, _ = await asyncio.to_thread(watcher.communicate)
    seen: list[tuple[int, float]] = [tuple(x) for x in json.loads(out)]
    services.terminate()
    services.wait()

    positions = [p for p, _ in seen]
    delays = []
    unseen = 0
    for nid, committed in commits:
        i = bisect.bisect_left(positions, nid)
        if i == len(seen):
            unseen += 1  # not applied before the watcher stopped: a backlog, reported below
            continue
        delays.append((seen[i][1] - committed) * 1000)
    if unseen:
        print(f"{unseen} events were not in the read model {SECONDS + 3} s after the start")
    rate = len(commits) / SECONDS
    print(
        f"commit -> read model at {rate:.0f} events/s ({len(commits)} events): "
        f"p50 {percentile(delays, 50):.1f} ms, p99 {percentile(delays, 99):.1f} ms "
        "(target p99 < 25 ms)"
    )


def main() -> None:
    print(f"cores: {cores()}")
    with bench_system(projections=False) as system:
        asyncio.run(throughput(system))
    with bench_system() as system:
        asyncio.run(latency(system.container))


if __name__ == "__main__":
    main()
