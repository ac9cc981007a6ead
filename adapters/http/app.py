"""The Litestar application: built by `create_app`, started and drained by its lifespan."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from eventsourcing.postgres import PostgresFactory
from litestar import Litestar
from litestar.di import Provide
from litestar.middleware import DefineMiddleware
from litestar.openapi import OpenAPIConfig
from litestar.openapi.spec import Components, SecurityScheme

from adapters.bootstrap import Container, Engine, Services, recover_runs
from adapters.http.api import Api
from adapters.http.auth import PUBLIC, BearerTokenAuthentication
from adapters.http.auth_routes import AuthController, WorkspaceController
from adapters.http.chat import ChatController
from adapters.http.errors import EXCEPTION_HANDLERS
from adapters.http.idempotency import IdempotencyMiddleware, IdempotencyStore
from adapters.http.limits import RateLimitMiddleware, RateLimits
from adapters.http.metrics import Metrics, MetricsMiddleware, metrics_endpoint
from adapters.http.ops import OpsController
from adapters.http.session_stream import HitlController, StreamController
from adapters.http.sessions import SessionController
from adapters.http.tools import ToolController
from adapters.http.uploads import UploadController
from adapters.nats.session_feed import SessionFeed

MAX_BODY = 2 * 1024 * 1024  # a 1 MiB message plus its JSON envelope fits; more is refused


def create_app(
    container: Container,
    services: Services,
    engine: Engine,
    *,
    limits: RateLimits | None = None,
) -> Litestar:
    """The HTTP API over a built container; background services run with the app.

    `limits` default to the settings' (tests pass their own).
    """
    feed = SessionFeed(
        sessions=container.sessions,
        bridge=container.bridge,
        connection=lambda: services.nats,
        stream=container.settings.nats_stream,
    )
    api = Api(container, services, engine, container.accounts, feed)
    s = container.settings
    limits = limits or RateLimits(
        requests_per_minute=s.rate_limit_per_minute,
        streams_per_user=s.max_streams_per_user,
        uploads_per_minute=s.uploads_per_minute,
    )
    metrics = Metrics(api, limits)
    factory = container.sessions.factory
    assert isinstance(factory, PostgresFactory)
    idempotency = IdempotencyStore(factory.datastore)

    @asynccontextmanager
    async def lifespan(_: Litestar) -> AsyncIterator[None]:
        await api.call(idempotency.create_table)
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

    app = Litestar(
        route_handlers=[
            OpsController,
            AuthController,
            WorkspaceController,
            SessionController,
            StreamController,
            ChatController,
            HitlController,
            ToolController,
            UploadController,
            metrics_endpoint,
        ],
        dependencies={"api": Provide(lambda: api, sync_to_thread=False)},
        # Outermost first: metrics see every answer; limits and idempotency know the user.
        middleware=[
            MetricsMiddleware(metrics),
            DefineMiddleware(BearerTokenAuthentication, exclude=PUBLIC),
            RateLimitMiddleware(limits),
            IdempotencyMiddleware(idempotency, container.bridge),
        ],
        exception_handlers=EXCEPTION_HANDLERS,  # type: ignore[arg-type]
        lifespan=[lifespan],
        request_max_body_size=MAX_BODY,
        openapi_config=OpenAPIConfig(
            title="TokenDance",
            version="1.0.0",
            components=Components(
                security_schemes={"BearerToken": SecurityScheme(type="http", scheme="bearer")}
            ),
            security=[{"BearerToken": []}],
        ),
    )
    app.state.api = api
    app.state.metrics = metrics
    return app
