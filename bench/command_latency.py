"""Session command latency with NATS up and with NATS down, in one run.

Commands answer from what they wrote (the event store), never by waiting on a read
model, so stopping NATS (which feeds the read models) should not change their
latency. A `tokendance serve` process runs on embedded Postgres and a NATS server of
this run's own, which is stopped half-way. Each phase sends the same mix of session
commands (create, rename, complete) from a few concurrent clients.

    python -m bench.command_latency [--commands 300] [--clients 8]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from uuid import UUID

import httpx

from adapters.processes.embedded import EmbeddedNats
from bench.api_harness import NO_LIMITS, Account, ApiServer, machine, register
from bench.harness import fresh_servers

Command = Callable[[httpx.Client], httpx.Response]


def commands(account: Account, sessions: list[UUID], n: int) -> list[tuple[str, Command]]:
    """`n` commands: a third each of create, rename and complete (each on its own session)."""
    workspace = str(account.workspace_id)
    mix: list[tuple[str, Command]] = []
    for i in range(n):
        sid = sessions[i]
        match i % 3:
            case 0:
                body = {"workspace_id": workspace, "title": f"bench {i}"}
                mix.append(("create", partial(_post, "/api/v1/sessions/", body)))
            case 1:
                body = {"title": f"renamed {i}"}
                mix.append(("rename", partial(_patch, f"/api/v1/sessions/{sid}", body)))
            case _:
                mix.append(("complete", partial(_post, f"/api/v1/sessions/{sid}/complete", None)))
    return mix


def _post(path: str, body: dict[str, str] | None, http: httpx.Client) -> httpx.Response:
    return http.post(path, json=body)


def _patch(path: str, body: dict[str, str], http: httpx.Client) -> httpx.Response:
    return http.patch(path, json=body)


def run_phase(
    url: str, account: Account, mix: list[tuple[str, Command]], clients: int
) -> dict[str, list[float]]:  # noqa: E501
    """Milliseconds per command, by kind; every command must succeed."""
    timings: dict[str, list[float]] = {}

    def one(item: tuple[str, Command]) -> tuple[str, float]:
        kind, command = item
        with httpx.Client(base_url=url, headers=account.headers, timeout=30) as http:
            started = time.perf_counter()
            response = command(http)
            took = (time.perf_counter() - started) * 1000
        assert response.status_code in (200, 201), response.text
        return kind, took

    with ThreadPoolExecutor(clients) as pool:
        for kind, took in pool.map(one, mix):
            timings.setdefault(kind, []).append(took)
    return timings


def percentile(values: list[float], p: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(p) - 1]


def report(phase: str, timings: dict[str, list[float]]) -> None:
    every = [t for ts in timings.values() for t in ts]
    for kind, ts in [*sorted(timings.items()), ("all", every)]:
        print(
            f"  {phase:<10} {kind:<9} n={len(ts):<4} p50 {percentile(ts, 50):7.1f} ms"
            f"   p99 {percentile(ts, 99):7.1f} ms"
        )


def prepare(url: str, account: Account, n: int) -> list[UUID]:
    with httpx.Client(base_url=url, headers=account.headers, timeout=30) as http:
        body = {"workspace_id": str(account.workspace_id), "title": "prepared"}
        return [UUID(http.post("/api/v1/sessions/", json=body).json()["id"]) for _ in range(n)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--commands", type=int, default=300)
    parser.add_argument("--clients", type=int, default=8)
    args = parser.parse_args()
    print(f"session command latency, NATS up vs down; {machine()}")
    with fresh_servers("cmdlat") as fresh:
        nats = EmbeddedNats(Path(fresh.root) / "own-nats")
        server = ApiServer(
            fresh.database_url, nats.start(), fresh.stream, fresh.root / "serve",
            extra_env=dict(NO_LIMITS),
        )  # fmt: skip
        try:
            server.start()
            with httpx.Client(base_url=server.url, timeout=30) as http:
                account = register(http, "latency@example.com")
            for phase in ("NATS up", "NATS down"):
                if phase == "NATS down":
                    nats.stop()
                    time.sleep(2)  # let the server notice (not measured)
                sessions = prepare(server.url, account, args.commands)
                timings = run_phase(
                    server.url, account, commands(account, sessions, args.commands), args.clients
                )
                report(phase, timings)
        finally:
            server.stop()
            nats.stop()


if __name__ == "__main__":
    main()
