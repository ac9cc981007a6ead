"""Embedded PostgreSQL (pgserver, with pgvector) and NATS (nats-server -js).

Used when no `TOKENDANCE_DATABASE_URL` / `TOKENDANCE_NATS_URL` is set, and by the
tests. Servers live in the data directory and are reused by the next start. The process
holding the data directory's ownership lease (`adapters/processes/lease.py`) owns them: it starts
or adopts them, stops them when it exits, and leaves a watchdog that stops them if it
is killed, unless a newer process has taken the lease (and the servers) over by then.
Any other process shares them and never stops them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

import psycopg

from adapters.processes.embedded_nats import EmbeddedNats, EmbeddedServerError, nats_server_binary
from adapters.processes.lease import STOPPING, Holder, LeaseHeld, OwnerLease
from adapters.processes.supervisor import Supervised, Supervisor

__all__ = ["EmbeddedNats", "EmbeddedPostgres", "EmbeddedServerError", "EmbeddedServers"]
__all__ += ["LeaseHeld", "nats_server_binary", "stop_postgres"]

log = logging.getLogger(__name__)

DATABASE = "tokendance"
# Every role's process keeps pools of its own (the store's, the loop's, the read models',
# the API role's): a split layout on one embedded Postgres (two APIs, two workers, the
# relay and the projections) passes Postgres's default of 100.
MAX_CONNECTIONS = 300
# Seconds a new owner waits for a departing one (or its watchdog) to let go.
LEASE_WAIT = 60.0


def _pgserver_user() -> str | None:
    # pgserver runs postgres as its own 'pgserver' user when we are root.
    return "pgserver" if os.geteuid() == 0 else None


def _quietly_import_pgserver() -> None:
    # pgserver's import asks platformdirs for a runtime dir, which warns when
    # XDG_RUNTIME_DIR is unset (as on servers and in CI); the fallback is fine.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            import pgserver  # noqa: F401
        except ImportError as e:
            raise EmbeddedServerError(
                f"the embedded Postgres needs pgserver ({e}): install tokendance[embedded] "
                "(or set TOKENDANCE_DATABASE_URL)"
            ) from None


def stop_postgres(pgdata: Path) -> None:
    """Stop the postgres running in `pgdata`, if any (fast shutdown)."""
    _quietly_import_pgserver()
    from pgserver.utils import PostmasterInfo

    info = PostmasterInfo.read_from_pgdata(pgdata)
    if info is None or not info.is_running():
        return
    with contextlib.suppress(subprocess.CalledProcessError):
        _pg_ctl(["-w", "-m", "fast", "stop"], pgdata, timeout=30)


def _pg_ctl(args: list[str], pgdata: Path, *, timeout: int) -> None:
    """pgserver's `pg_ctl` (which its package does not export) as pgserver's user."""
    from pgserver import _commands

    pg_ctl: Callable[..., object] = vars(_commands)["pg_ctl"]
    pg_ctl(args, pgdata=pgdata, user=_pgserver_user(), timeout=timeout)


class EmbeddedPostgres:
    """PostgreSQL 16 with pgvector from the `pgserver` package, in `root`."""

    def __init__(self, root: Path) -> None:
        self.pgdata = root.resolve()
        self.owned = False
        self.url = ""

    def start(self, *, own: bool = True) -> str:
        """Start postgres, or reuse the one running in `pgdata`; stop it later if `own`."""
        _quietly_import_pgserver()
        import pgserver

        self.pgdata.parent.mkdir(parents=True, exist_ok=True)
        # pgserver caches one handle per directory, which still says "running" after
        # the server died: forget it, so that a restart really starts one.
        pgserver.PostgresServer._instances.pop(self.pgdata, None)
        server = pgserver.get_server(self.pgdata, cleanup_mode=None)
        self.owned = own
        admin_url = server.get_uri()
        if own:
            self._allow_connections(admin_url)
        self.url = admin_url.replace("/postgres?", f"/{DATABASE}?")
        self._prepare_database(admin_url)
        return self.url

    def _allow_connections(self, admin_url: str) -> None:
        """`MAX_CONNECTIONS`, set once in the data directory (a restart, the first time)."""
        with psycopg.connect(admin_url, autocommit=True) as conn:
            row = conn.execute("SHOW max_connections").fetchone()
            if row is not None and int(row[0]) >= MAX_CONNECTIONS:
                return
            conn.execute(f"ALTER SYSTEM SET max_connections = {MAX_CONNECTIONS}")
        log.info("embedded Postgres: max_connections %d (restarting it once)", MAX_CONNECTIONS)
        log_file = str(self.pgdata / "log")  # where pgserver has it write
        _pg_ctl(["-w", "-m", "fast", "-l", log_file, "restart"], self.pgdata, timeout=60)

    def _prepare_database(self, admin_url: str) -> None:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,))
            if exists.fetchone() is None:
                conn.execute(f'CREATE DATABASE "{DATABASE}"')
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")

    def running(self) -> bool:
        _quietly_import_pgserver()
        from pgserver.utils import PostmasterInfo

        info = PostmasterInfo.read_from_pgdata(self.pgdata)
        return info is not None and info.is_running()

    def restart(self) -> None:
        self.start(own=True)

    def stop(self) -> None:
        if self.owned:
            stop_postgres(self.pgdata)
            self.owned = False


class EmbeddedServers:
    """Starts (or adopts) what is not configured by URL, as the owner when it gets the
    data directory's lease, else shares what the owner runs.

    `exclusive` refuses to share (`LeaseHeld` names the owner); `supervise` restarts a
    server that dies while we own it.
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        postgres: bool = True,
        nats: bool = True,
        role: str = "command",
        exclusive: bool = False,
        supervise: bool = False,
    ) -> None:
        self.data_dir = data_dir.resolve()
        self.postgres = EmbeddedPostgres(data_dir / "postgres") if postgres else None
        self.nats = EmbeddedNats(data_dir / "nats") if nats else None
        self.lease = OwnerLease(self.data_dir, role)
        self.exclusive = exclusive
        self.supervise = supervise
        self.owner: Holder | None = None  # who owns them, when we share
        self._watchdog: subprocess.Popen[bytes] | None = None
        self._supervisor: Supervisor | None = None

    @property
    def database_url(self) -> str | None:
        return self.postgres.url if self.postgres else None

    @property
    def nats_url(self) -> str | None:
        return self.nats.url if self.nats else None

    @property
    def owned(self) -> bool:
        return self.lease.held

    def start(self) -> EmbeddedServers:
        if not (self.postgres or self.nats):
            return self
        self.owner = self.lease.acquire(LEASE_WAIT)
        if self.owner is not None:
            if self.exclusive:
                raise LeaseHeld(self.data_dir, self.owner)
            log.info("sharing the embedded servers in %s with %s", self.data_dir, self.owner)
        try:
            if self.postgres:
                self.postgres.start(own=self.owned)
            if self.nats:
                self.nats.start(own=self.owned)
        except BaseException:
            self.stop()
            raise
        if self.owned:
            self._start_watchdog()
            if self.supervise:
                self._supervisor = Supervisor(self._supervised()).start()
        return self

    def _supervised(self) -> dict[str, Supervised]:
        servers: dict[str, Supervised] = {}
        if self.postgres:
            servers["postgres"] = self.postgres
        if self.nats:
            servers["nats"] = self.nats
        return servers

    def _start_watchdog(self) -> None:
        me = Holder.me(self.lease.role)
        args = ["--data-dir", str(self.data_dir), "--owner", f"{me.pid}:{me.started}"]
        args += ["--postgres"] if self.postgres else []
        args += ["--nats"] if self.nats else []
        self._watchdog = subprocess.Popen(
            [sys.executable, "-m", "adapters.processes.watchdog", *args],
            stdin=subprocess.PIPE,
            start_new_session=True,
        )

    def stop(self) -> None:
        if self._supervisor is not None:
            self._supervisor.stop()
            self._supervisor = None
        if self.lease.held:
            self.lease.announce(STOPPING)  # a newer process waits for us, not refuses
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
        self.lease.release()

    def close(self) -> None:
        self.stop()

    def __enter__(self) -> EmbeddedServers:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
