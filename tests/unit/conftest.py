"""The unit tier starts no server and talks to none.

`servers` (and so `database_url`, `nats_url`, `system`...) fails here: a test that needs
Postgres or NATS belongs in tests/integration. And every test runs under a guard that
fails it when it opens a connection to a Postgres or a NATS server anyway (one started
by hand, or another run's): a TCP connection to a port a `postgres` or `nats-server`
process listens on, a Unix socket of Postgres (`.s.PGSQL.<port>`), or a psycopg
connection to either (libpq opens its sockets in C, out of the socket module's sight).
Fakes on loopback (HTTP, S3, OTLP, MCP...) are fine.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import psutil
import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict

SERVERS = ("postgres", "nats-server")  # process names (/proc/PID/comm)
MOVE = "the unit tier starts no server and talks to none: move this test to tests/integration"


@pytest.fixture(scope="session")
def servers() -> NoReturn:
    pytest.fail(f"{MOVE} (it asks for the servers)")


def server_listening_on(port: int) -> str | None:
    """The name of the Postgres or NATS process listening on TCP `port`, if one does."""
    for conn in psutil.net_connections(kind="inet"):
        if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port:
            try:
                name = psutil.Process(conn.pid).name() if conn.pid else ""
            except psutil.Error:
                continue
            if name.startswith(SERVERS):
                return name
    return None


class Guard:
    """What a test connected to; `check` fails the test at a server (and remembers it, so
    that the test fails even if the code under test swallows the failure)."""

    def __init__(self) -> None:
        self.own: set[int] = set()  # ports this process listens on: its fakes' own
        self.known: dict[int, str | None] = {}  # port -> the server listening on it
        self.refused: list[str] = []

    def refuse(self, what: str) -> NoReturn:
        self.refused.append(what)
        pytest.fail(f"{MOVE} (it connects to {what})")

    def check(self, family: int, address: Any) -> None:
        if family == socket.AF_UNIX:
            path = address.decode() if isinstance(address, bytes) else str(address)
            if Path(path).name.startswith(".s.PGSQL."):
                self.refuse(f"Postgres at {path}")
        elif family in (socket.AF_INET, socket.AF_INET6) and isinstance(address, tuple):
            port = int(address[1])
            if port in self.own:
                return
            if port not in self.known:
                self.known[port] = server_listening_on(port)
            if name := self.known[port]:
                self.refuse(f"{name} on port {port}")

    def check_conninfo(self, conninfo: str) -> None:
        params = conninfo_to_dict(conninfo)
        port = int(str(params.get("port") or 5432).split(",")[0])
        hosts = params.get("hostaddr") or params.get("host") or "/var/run/postgresql,/tmp"
        for host in str(hosts).split(","):
            if host.startswith("/"):
                self.check(socket.AF_UNIX, f"{host}/.s.PGSQL.{port}")
            else:
                self.check(socket.AF_INET, (host, port))


@pytest.fixture(autouse=True)
def no_server_connections(monkeypatch: pytest.MonkeyPatch) -> Iterator[Guard]:
    """Guards `socket.connect`, `connect_ex` and psycopg's connections during the test."""
    guard = Guard()
    real = socket.socket
    listen, connect, connect_ex = real.listen, real.connect, real.connect_ex
    connect_gen = psycopg.generators.connect  # what every psycopg connection goes through

    def listening(self: socket.socket, *args: Any) -> None:
        listen(self, *args)
        if self.family in (socket.AF_INET, socket.AF_INET6):
            guard.own.add(int(self.getsockname()[1]))

    def guarded_connect(self: socket.socket, address: Any) -> None:
        guard.check(self.family, address)
        connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: Any) -> int:
        guard.check(self.family, address)
        return connect_ex(self, address)

    def guarded_gen(conninfo: str, *args: Any, **kwargs: Any) -> Any:
        guard.check_conninfo(conninfo)
        return connect_gen(conninfo, *args, **kwargs)

    monkeypatch.setattr(real, "listen", listening)
    monkeypatch.setattr(real, "connect", guarded_connect)
    monkeypatch.setattr(real, "connect_ex", guarded_connect_ex)
    monkeypatch.setattr(psycopg.generators, "connect", guarded_gen)
    yield guard
    if guard.refused:
        pytest.fail(f"{MOVE} (it connected to {', '.join(guard.refused)})")
