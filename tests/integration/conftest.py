"""Fixtures shared by the integration suites."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from eventsourcing.postgres import PostgresDatastore, PostgresFactory
from litestar.testing import TestClient

from adapters.bootstrap import bootstrap
from adapters.config.settings import Settings
from adapters.container import Container
from adapters.http.app import create_app
from adapters.llm.scripted import ScriptedLLM, session_of
from adapters.system import System
from domain.conversation import ModelRequest, StreamItem
from tests.integration.memory_store import Memories

Client = TestClient  # type: ignore[type-arg]


@pytest.fixture
def datastore(container: Container) -> PostgresDatastore:
    """The event store's datastore (its connection pool) in the test's database."""
    factory = container.sessions.factory
    assert isinstance(factory, PostgresFactory)
    return factory.datastore


@pytest.fixture
def memories(database_url: str, request: pytest.FixtureRequest) -> Iterator[Memories]:
    """Memory namespaces in an event store and the memories view fed from its log."""
    assert request.node.get_closest_marker("empty_database"), (
        "mark the test empty_database: these tests make the memory tables alone"
    )
    found = Memories(database_url)
    yield found
    found.close()


class BySession:
    """A scripted model per session, chosen once the session exists (`llm.scripts[sid]`)."""

    def __init__(self) -> None:
        self.scripts: dict[str, ScriptedLLM] = {}

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        async for item in self.scripts[session_of(request)].stream(request):
            yield item


@pytest.fixture
def client(system: System) -> Iterator[Client]:
    """The HTTP API of the test's system, in process (its services run with it)."""
    with TestClient(create_app(system)) as client:
        yield client


@pytest.fixture
def running(
    settings: Settings, database_url: str, nats_url: str
) -> Iterator[tuple[Client, System, BySession]]:
    llm = BySession()
    system = bootstrap(settings, database_url=database_url, nats_url=nats_url, llm=llm)
    app = create_app(system)
    try:
        with TestClient(app) as client:
            yield client, system, llm
    finally:
        system.close()
