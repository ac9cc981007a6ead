"""Commit-to-SSE-client latency at a steady 500 events/s.

`tokendance serve` runs as its own process; one SSE session stream per session is
held open by a reader process; this process writes user messages straight into the
event store at the rate, noting when each commit returns. The delay is from that
moment to the arrival of the event's `id:` line (its session version) at the reader:
relay (NOTIFY, read, JetStream publish), NATS fan-out, the server's feed, Litestar
and uvicorn, TCP, and httpx in the reader.

python -m bench.sse_latency [--rate 500] [--seconds 10] [--sessions 4]
"""

from __future__ import annotations

import argparse
import os
import time

import httpx

from bench.api_harness import (
    CpuWindow,
    api_stack,
    create_sessions,
    machine,
    raised_limits,
    register,
)
from bench.harness import percentile
from bench.sse_watch import Watcher, delays_ms, produce

WARM_UP = 2.0  # seconds of events first, not counted
SETTLE = 1.0  # seconds allowed for the last events to arrive


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=500, help="events per second in total")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--sessions", type=int, default=4)
    options = parser.parse_args()
    print(machine())
    print(f"server limits raised: {raised_limits()}")
    with api_stack() as stack:
        with httpx.Client(base_url=stack.server.url, timeout=30) as http:
            account = register(http, "latency@bench.example")
            sessions = create_sessions(http, account, options.sessions)
        watcher = Watcher(stack.server.url, [(s, account.token) for s in sessions])
        container = stack.store()
        try:
            assert watcher.ready == len(sessions), watcher.failures
            produce(container, sessions, options.rate, WARM_UP)
            cpu = CpuWindow(server=stack.server.pid, reader=watcher.pid, producer=os.getpid())
            commits = produce(container, sessions, options.rate, options.seconds)
            cpu_used = cpu.report()
            time.sleep(SETTLE)
            watched = watcher.stop()
        finally:
            watcher.kill()
            container.close()
    delays, missing = delays_ms(commits, watched.arrivals, list(range(len(sessions))))
    print(
        f"commit -> SSE client at {len(commits) / options.seconds:.0f} events/s "
        f"over {len(sessions)} sessions, one stream each ({len(delays)} events): "
        f"p50 {percentile(delays, 50):.1f} ms, p99 {percentile(delays, 99):.1f} ms, "
        f"max {max(delays):.1f} ms (target p99 < 30 ms)"
    )
    print(f"events never delivered: {missing}; stream errors: {len(watched.failures)}")
    print(cpu_used)


if __name__ == "__main__":
    main()
