"""`tokendance serve` on its own embedded servers, as a real process, for fault tests."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import psutil

from tests.e2e.client import free_port, wait_until
from tests.fork_server import Process, spawn

READY_TIMEOUT = 90.0  # seconds; generous: CI runs on two cores


def serve_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOKENDANCE_", "ANTHROPIC_"))}
    env.update(TOKENDANCE_LOG_LEVEL="INFO", TOKENDANCE_RATE_LIMIT_PER_MINUTE="100000")
    return env


@dataclass
class Serve:
    """One `tokendance serve --data-dir DATA` process; its stderr goes to DATA/../<log>."""

    data_dir: Path
    port: int = field(default_factory=free_port)
    process: Process | None = None
    extra_env: dict[str, str] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log(self) -> Path:
        return self.data_dir.parent / f"{self.data_dir.name}-serve.log"

    def start(self) -> Serve:
        self.data_dir.parent.mkdir(parents=True, exist_ok=True)
        with self.log.open("ab") as err:
            self.process = spawn(
                ["--data-dir", str(self.data_dir), "serve", "--port", str(self.port)],
                {**serve_env(), **self.extra_env}, stdout=subprocess.DEVNULL, stderr=err,
            )  # fmt: skip
        return self

    def readiness(self) -> httpx.Response | None:
        try:
            return httpx.get(f"{self.url}/readiness", timeout=5)
        except httpx.HTTPError:
            return None

    def ready(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise AssertionError(f"serve exited with {self.process.returncode}:\n{self.tail()}")
        response = self.readiness()
        return response is not None and response.status_code == 200

    def wait_ready(self) -> Serve:
        wait_until(self.ready, timeout=READY_TIMEOUT, interval=0.1)
        return self

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def watchdog(self) -> psutil.Process:
        """The watchdog this serve process started."""
        assert self.process is not None
        for child in psutil.Process(self.process.pid).children():
            if "adapters.processes.watchdog" in child.cmdline():
                return child
        raise AssertionError("serve runs no watchdog")

    def tail(self, lines: int = 40) -> str:
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def postmaster_pid(data_dir: Path) -> int:
    return int((data_dir / "postgres" / "postmaster.pid").read_text().split()[0])


def nats_state(data_dir: Path) -> dict[str, int]:
    state: dict[str, int] = json.loads((data_dir / "nats" / "server.json").read_text())
    return state
