"""The Litestar application: `create_app` registers the routes and the middleware on
what the composition root built (`adapters.bootstrap.http`), started and drained by its
lifespan (`HttpParts.serving`).

Handlers take one dependency, `api: ApiDep` (adapters/http/deps.py), and use what they
need of it (`api.sessions`, `api.views`, `api.scheduler`, ...).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from litestar import Litestar
from litestar.di import Provide
from litestar.middleware import DefineMiddleware
from litestar.types import ControllerRouterHandler

from adapters.config.settings import WEB_DIST
from adapters.http.contract.openapi import complete, docs_routes, openapi_config
from adapters.http.deps import api_of
from adapters.http.errors import EXCEPTION_HANDLERS
from adapters.http.middleware import log_redaction
from adapters.http.middleware.auth import PUBLIC, BearerTokenAuthentication
from adapters.http.middleware.bodies import JsonRequest
from adapters.http.middleware.cors import cors_config
from adapters.http.middleware.fail_fast import FailFastMiddleware
from adapters.http.middleware.idempotency import IdempotencyMiddleware
from adapters.http.middleware.limits import RateLimitMiddleware, RateLimits
from adapters.http.middleware.login_limits import LoginLimits
from adapters.http.middleware.metrics import MetricsMiddleware
from adapters.http.routes.api_keys import ApiKeyController
from adapters.http.routes.artifacts import ArtifactController
from adapters.http.routes.auth_routes import AuthController, WorkspaceController
from adapters.http.routes.budgets import BudgetsController
from adapters.http.routes.chat import ChatController
from adapters.http.routes.deck_pages import DeckController
from adapters.http.routes.episodic_search import EpisodicSearchController
from adapters.http.routes.mcp_servers import McpServersController
from adapters.http.routes.memories import MemoryController
from adapters.http.routes.ops import OpsController, metrics_endpoint
from adapters.http.routes.profile import ProfileController
from adapters.http.routes.replay import ReplayController
from adapters.http.routes.session_stream import HitlController, StreamController
from adapters.http.routes.sessions import SessionController
from adapters.http.routes.skills import SkillController
from adapters.http.routes.teams import InvitationController, TeamController
from adapters.http.routes.tools import ToolController
from adapters.http.routes.uploads import UploadController
from adapters.http.routes.usage import UsageController
from adapters.http.routes.user_erasure import ErasureController
from adapters.http.routes.web_app import web_routes
from adapters.http.routes.workspace_files import workspace_files_router
from adapters.http.routes.ws import push_socket
from adapters.observability.telemetry_runs import http_tracing, request_spans
from adapters.system import System

log = logging.getLogger(__name__)
MAX_BODY = 2 * 1024 * 1024  # a 1 MiB message plus its JSON envelope fits; more is refused
HANDLERS: list[ControllerRouterHandler] = [
    OpsController, AuthController, ProfileController, ErasureController, WorkspaceController,
    TeamController,
    InvitationController, ApiKeyController, SessionController, ReplayController, StreamController,
    ChatController, HitlController, ToolController, UploadController, UsageController,
    BudgetsController, ArtifactController, DeckController, SkillController, metrics_endpoint,
    push_socket,
]  # fmt: skip


def routes(max_file_bytes: int, web_dir: Path = WEB_DIST) -> list[ControllerRouterHandler]:
    """Every route: the app's, the OpenAPI document's (`openapi_document.py`) and the
    web client's (`web_app.py`: not in the document)."""
    return [
        *HANDLERS,
        *docs_routes(),
        workspace_files_router(max_file_bytes),
        MemoryController,
        EpisodicSearchController,
        McpServersController,
        *web_routes(web_dir),
    ]


def create_app(
    system: System, *, limits: RateLimits | None = None, login_limits: LoginLimits | None = None
) -> Litestar:
    """The HTTP API on the parts the composition root built (`system.http`): its routes,
    its middleware and, as its lifespan, what runs beside the requests.

    `limits` and `login_limits` replace the settings' (tests count with their own);
    with `system.telemetry`, each request is a span (`adapters/observability/telemetry_runs.py`).
    """
    parts = system.http.limited(limits, login_limits)
    api = parts.api

    @asynccontextmanager
    async def lifespan(_: Litestar) -> AsyncIterator[None]:
        async with parts.serving():
            yield

    app = Litestar(
        route_handlers=[
            *routes(system.container.files.max_bytes, system.settings.web_dir),
            parts.mcp_route,
        ],
        dependencies={"api": Provide(_constant(api), sync_to_thread=False)},  # the only one
        # Outermost first: metrics see every answer; limits and idempotency know the user.
        middleware=[
            FailFastMiddleware(),  # a busy pool: 503 at once (adapters/postgres/busy_store)
            *request_spans(system.telemetry),  # inside the request's span, outside the rest
            MetricsMiddleware(api.metrics),
            DefineMiddleware(BearerTokenAuthentication, exclude=PUBLIC),
            RateLimitMiddleware(parts.limits),
            IdempotencyMiddleware(parts.idempotency, api.bridge),
        ],
        exception_handlers=EXCEPTION_HANDLERS,  # type: ignore[arg-type]
        cors_config=cors_config(system.settings),  # outside the rest: preflights need no token
        lifespan=[lifespan],
        on_startup=[log_redaction.install],  # no access token reaches a log
        # The process configured logging (adapters/observability/json_logs.py): litestar's
        # own config would replace the root logger's handler, its format and its level.
        logging_config=None,
        on_shutdown=[parts.idempotency.close],  # this process's Idempotency-Key leases
        request_max_body_size=MAX_BODY,
        request_class=JsonRequest,  # a body that is not JSON answers 400 saying where
        openapi_config=openapi_config(),
        plugins=http_tracing(system.telemetry),
    )
    complete(app.openapi_schema)
    app.state.api = api  # for the middleware (`deps.api_of`): nothing else is kept there
    return app


def end_streams(app: Litestar) -> None:
    """End every open SSE stream now (shutting down); a client resumes from its last id."""
    api_of(app.state).feed.close()


def _constant(value: object) -> Callable[[], object]:
    def provide() -> object:
        return value

    return provide
