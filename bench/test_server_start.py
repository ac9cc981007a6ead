"""What a test pays to start a `tokendance` server: a fresh `python -m adapters.cli`
against one forked by the tests' fork server (tests/fork_server.py), imports done.

Both start the `api` role on one embedded Postgres and NATS (started once here), each
round on a stream of its own, in alternating order, and are timed from the start to
the first `/health` that answers 200, then stopped.

python -m bench.test_server_start [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx

from adapters.processes.embedded import EmbeddedServers
from tests.e2e.client import free_port
from tests.fork_server import Process, spawn

Start = Callable[[list[str], dict[str, str]], Process]


def popen(args: list[str], env: dict[str, str]) -> Process:
    return subprocess.Popen([sys.executable, "-m", "adapters.cli", *args], env=env)


def forked(args: list[str], env: dict[str, str]) -> Process:
    return spawn(args, env)


def seconds_to_health(start: Start, database_url: str, nats_url: str, data: Path) -> float:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOKENDANCE_")}
    env.update(
        TOKENDANCE_DATABASE_URL=database_url,
        TOKENDANCE_NATS_URL=nats_url,
        TOKENDANCE_NATS_STREAM=f"B{uuid.uuid4().hex[:10].upper()}",
        TOKENDANCE_DATA_DIR=str(data / uuid.uuid4().hex[:8]),
        TOKENDANCE_JWT_SECRET="bench-" + "x" * 32,
        TOKENDANCE_LOG_LEVEL="WARNING",
    )
    began = time.perf_counter()
    process = start(["api", "--port", str(port)], env)
    try:
        while True:
            if process.poll() is not None:
                raise SystemExit(f"the server exited with {process.returncode}")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    return time.perf_counter() - began
            except httpx.HTTPError:
                time.sleep(0.02)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    rounds = parser.parse_args().rounds
    ways: dict[str, Start] = {"python -m adapters.cli": popen, "forked": forked}
    times: dict[str, list[float]] = {name: [] for name in ways}
    with tempfile.TemporaryDirectory(prefix="bench-starts-") as folder:
        data = Path(folder)
        data.chmod(0o755)  # postgres runs as another user when this runs as root
        with EmbeddedServers(data / "servers", postgres=True, nats=True) as servers:
            assert servers.database_url and servers.nats_url
            forked(["--version"], dict(os.environ)).wait(60)  # the fork server, started
            for n in range(rounds):
                order = list(ways.items()) if n % 2 == 0 else list(reversed(ways.items()))
                for name, start in order:
                    elapsed = seconds_to_health(start, servers.database_url, servers.nats_url, data)
                    times[name].append(elapsed)
    cores = os.cpu_count()
    print(f"start to /health of `tokendance api`, {rounds} alternating rounds, {cores} cores")
    for name, values in times.items():
        print(f"  {name:24} median {statistics.median(values):.2f} s  (min {min(values):.2f})")
    ratio = statistics.median(times["forked"]) / statistics.median(times["python -m adapters.cli"])
    print(f"  forked / fresh: {ratio:.2f}x")


if __name__ == "__main__":
    main()
