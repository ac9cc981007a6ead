"""Several `projections` processes: one consumes for each read model, the others stand by."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from uuid import uuid4

import pytest

from adapters.bootstrap import bootstrap
from adapters.bootstrap.background import Background
from adapters.config.settings import Settings
from adapters.llm.unconfigured import UnconfiguredLLM
from adapters.system import System
from tests.waiting import eventually_async

pytestmark = pytest.mark.integration


@pytest.fixture
async def two(settings: Settings, database_url: str, nats_url: str) -> AsyncIterator[list[System]]:
    systems = [
        bootstrap(
            settings,
            database_url=database_url,
            nats_url=nats_url,
            llm=UnconfiguredLLM(),
            background=Background(standby=True),
        )
        for _ in range(2)
    ]
    for system in systems:
        await system.services.start()
    yield systems
    for system in systems:
        await system.services.stop()
        system.close()


def caught_up(system: System) -> Callable[[], object]:
    async def check() -> bool:
        head = system.container.recorder.max_notification_id() or 0
        view = system.container.views["sessions"]
        return bool(head) and view.position() == head

    return check


async def test_each_view_has_one_active_consumer_and_a_standby_takes_over(
    two: list[System],
) -> None:
    a, b = two
    sessions = a.container.sessions
    for _ in range(3):
        sessions.start_session(workspace_id=uuid4(), owner_id=uuid4(), title="t")
    await eventually_async(caught_up(a), what="the sessions view to catch up")
    views = set(a.container.views)
    await eventually_async(
        lambda: asyncio.sleep(0, a.services.active_views | b.services.active_views == views),
        what="every view to have its consumer",
    )
    assert not a.services.active_views & b.services.active_views  # one consumer per view

    active = a if "sessions" in a.services.active_views else b
    standby = b if active is a else a
    await active.services.stop()  # its locks go with its connection
    before = standby.services.runners["sessions"].applied
    sessions.start_session(workspace_id=uuid4(), owner_id=uuid4(), title="after")
    await eventually_async(
        lambda: asyncio.sleep(0, standby.services.runners["sessions"].applied > before),
        what="the standby to take over",
    )
    await eventually_async(caught_up(standby), what="the view to catch up")
    assert standby.services.active_views == views
