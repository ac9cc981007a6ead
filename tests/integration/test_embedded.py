"""Embedded servers: start in the data directory, reuse it, leave no orphans."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from adapters.processes.embedded import MAX_CONNECTIONS, EmbeddedServers
from tests.waiting import eventually

pytestmark = [pytest.mark.integration, pytest.mark.slow]

OWNER = """
import json, sys, time
from pathlib import Path
from adapters.processes.embedded import EmbeddedServers
servers = EmbeddedServers(Path(sys.argv[1])).start()
pg_pid = servers.postgres.pgdata.joinpath("postmaster.pid").read_text().split()[0]
print(json.dumps({"db": servers.database_url, "pg_pid": pg_pid, "nats_pid": servers.nats.pid}))
sys.stdout.flush()
time.sleep(600)
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purposes.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split(")")[-1].split()[0] != "Z"


def wait_gone(pid: int, what: str) -> None:
    eventually(lambda: not alive(pid), timeout=30, what=what, interval=0.1)


def test_a_killed_owner_leaves_no_server_behind_and_data_survives(data_root: Path) -> None:
    data_dir = data_root / "owned"
    owner = subprocess.Popen(
        [sys.executable, "-c", OWNER, str(data_dir)], stdout=subprocess.PIPE, text=True
    )
    assert owner.stdout is not None
    started = json.loads(owner.stdout.readline())
    with psycopg.connect(started["db"], autocommit=True) as conn:
        conn.execute("CREATE TABLE kept (x int)")
        conn.execute("INSERT INTO kept VALUES (42)")

    owner.send_signal(signal.SIGKILL)
    owner.wait()
    wait_gone(int(started["pg_pid"]), "postgres to go with its owner")
    wait_gone(int(started["nats_pid"]), "nats-server to go with its owner")

    with EmbeddedServers(data_dir) as again:  # the same data directory, reused
        assert again.postgres is not None and again.postgres.owned
        with psycopg.connect(again.database_url or "") as conn:
            assert conn.execute("SELECT x FROM kept").fetchone() == (42,)


def test_a_second_process_reuses_running_servers_without_owning_them(data_root: Path) -> None:
    data_dir = data_root / "shared-by-two"
    with EmbeddedServers(data_dir) as first:
        second = EmbeddedServers(data_dir).start()
        assert second.database_url == first.database_url
        assert second.nats_url == first.nats_url
        assert second.postgres is not None and not second.postgres.owned
        assert second.nats is not None and not second.nats.owned
        second.stop()  # must not stop what the first one runs
        with psycopg.connect(first.database_url or "") as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)


def test_the_embedded_postgres_takes_the_connections_of_a_split_layout(
    servers: tuple[str, str],
) -> None:
    """Every role's process keeps pools of its own: Postgres's default of 100 connections
    is too few for two APIs, two workers, the relay and the projections."""
    if os.environ.get("TOKENDANCE_TEST_DATABASE_URL"):
        pytest.skip("the tests run on a Postgres given by URL")
    with psycopg.connect(servers[0]) as conn:
        row = conn.execute("SHOW max_connections").fetchone()
    assert row is not None and int(row[0]) >= MAX_CONNECTIONS == 300
