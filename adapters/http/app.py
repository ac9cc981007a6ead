"""The Litestar application: built by `create_app`, started and drained by its lifespan."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from litestar import Litestar, get

from adapters.bootstrap import Container, Engine, Services, recover_runs
from schemas.health import Health, ProjectionHealth, RelayHealth


def create_app(container: Container, services: Services, engine: Engine) -> Litestar:
    """The HTTP API over a built container; background services run with the app."""

    @asynccontextmanager
    async def lifespan(_: Litestar) -> AsyncIterator[None]:
        await services.start(wait_for_nats=False)
        recovery = asyncio.create_task(recover_runs(container, engine), name="recover runs")
        try:
            yield
        finally:
            recovery.cancel()
            await (
                engine.scheduler.close()
            )  # runs stay active in the log; the next start resumes them
            await services.stop()

    @get("/health")
    async def health() -> Health:
        return await health_report(container, services)

    return Litestar(route_handlers=[health], lifespan=[lifespan])


async def health_report(container: Container, services: Services) -> Health:
    head = await container.bridge(container.recorder.max_notification_id) or 0
    relay = services.relay
    relay_health = (
        RelayHealth(
            active=relay.is_leader, position=relay.position, lag=max(head - relay.position, 0)
        )
        if relay is not None
        else None
    )
    projections = []
    for name, runner in services.runners.items():
        position = await container.bridge(runner.view.position)
        projections.append(
            ProjectionHealth(
                name=name,
                position=position,
                lag=max(head - position, 0),
                error=str(runner.error) if runner.error else None,
            )
        )
    failed = any(p.error for p in projections)
    return Health(
        status="degraded" if failed else "ok",
        head=head,
        relay=relay_health,
        projections=projections,
    )
