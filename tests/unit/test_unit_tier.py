"""The unit tier starts no server and talks to none (tests/unit/conftest.py): a test
that asks for the servers, or connects to a Postgres or a NATS however it found one,
fails; fakes on loopback answer as ever."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from tests.unit.conftest import Guard

LISTEN = """
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen()
print(s.getsockname()[1], flush=True)
sys.stdin.read()
"""


@pytest.fixture
def fake_nats(tmp_path: Path) -> Iterator[int]:
    """The port of a listener whose process is named `nats-server` (a Python, renamed)."""
    named = tmp_path / "nats-server"
    named.symlink_to(sys.executable)
    process = subprocess.Popen(
        [str(named), "-c", LISTEN], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    try:
        yield int(process.stdout.readline())
    finally:
        process.kill()
        process.wait()


@pytest.fixture
def postgres_socket() -> Iterator[Path]:
    """A directory holding a listening Unix socket named as Postgres names its own."""
    with tempfile.TemporaryDirectory() as folder:  # short: a socket path has ~100 bytes
        server = socket.socket(socket.AF_UNIX)
        server.bind(os.path.join(folder, ".s.PGSQL.5432"))
        server.listen()
        try:
            yield Path(folder)
        finally:
            server.close()


def test_a_socket_to_a_nats_server_fails_the_test(
    fake_nats: int, no_server_connections: Guard
) -> None:
    with pytest.raises(pytest.fail.Exception, match="move this test to tests/integration"):
        socket.create_connection(("127.0.0.1", fake_nats), timeout=5)
    assert no_server_connections.refused == [f"nats-server on port {fake_nats}"]
    no_server_connections.refused.clear()  # this test expected it


def test_a_connection_to_postgres_fails_the_test_by_socket_or_by_psycopg(
    postgres_socket: Path, no_server_connections: Guard
) -> None:
    with pytest.raises(pytest.fail.Exception, match="Postgres at"):
        socket.socket(socket.AF_UNIX).connect(str(postgres_socket / ".s.PGSQL.5432"))
    with pytest.raises(pytest.fail.Exception, match="Postgres at"):
        psycopg.connect(host=str(postgres_socket), port=5432, dbname="x", connect_timeout=1)
    with pytest.raises(pytest.fail.Exception, match="Postgres at"):
        psycopg.connect(f"postgresql:///x?host={postgres_socket}")
    assert len(no_server_connections.refused) == 3
    no_server_connections.refused.clear()


def test_asking_for_the_servers_fails_the_test(request: pytest.FixtureRequest) -> None:
    with pytest.raises(pytest.fail.Exception, match="asks for the servers"):
        request.getfixturevalue("database_url")


def test_a_fake_on_loopback_answers(no_server_connections: Guard) -> None:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    with server, socket.create_connection(server.getsockname(), timeout=5) as client:
        peer, _ = server.accept()
        with peer:
            client.sendall(b"ping")
            assert peer.recv(4) == b"ping"
    assert no_server_connections.refused == []
