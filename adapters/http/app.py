"""The Litestar application: built by `create_app`, started and drained by its lifespan.

Handlers take one dependency, `api: ApiDep` (adapters/http/deps.py), and use what they
need of it (`api.sessions`, `api.views`, `api.scheduler`, ...); `create_app` builds it
from what the composition root built.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

from eventsourcing.postgres import PostgresApplicationRecorder, PostgresFactory
from litestar import Litestar
from litestar.di import Provide
from litestar.middleware import DefineMiddleware
from litestar.types import ControllerRouterHandler
from opentelemetry.trace import TracerProvider

from adapters.bootstrap.roles import recover_runs
from adapters.container import Container
from adapters.http import log_redaction
from adapters.http.api_keys import ApiKeyController
from adapters.http.artifact_lookup import ArtifactLookup
from adapters.http.artifacts import ArtifactController
from adapters.http.auth import PUBLIC, BearerTokenAuthentication
from adapters.http.auth_routes import AuthController, WorkspaceController
from adapters.http.bodies import JsonRequest
from adapters.http.budgets import BudgetsController
from adapters.http.chat import ChatController
from adapters.http.cors import cors_config
from adapters.http.cursors import Cursors
from adapters.http.deck_pages import DeckController, DeckPages
from adapters.http.deps import Access, Api, ReadModels
from adapters.http.episodic_search import Episodes, EpisodicSearchController
from adapters.http.errors import EXCEPTION_HANDLERS
from adapters.http.idempotency import IdempotencyMiddleware, IdempotencyStore
from adapters.http.limits import RateLimitMiddleware, RateLimits
from adapters.http.login_limits import LoginLimits
from adapters.http.mcp_servers import McpServersController
from adapters.http.memories import MemoryApi, MemoryController
from adapters.http.metrics import Metrics, MetricsMiddleware, metrics_endpoint
from adapters.http.openapi import complete, docs_routes, openapi_config
from adapters.http.ops import OpsController, Probes
from adapters.http.profile import ProfileController
from adapters.http.read_your_writes import ViewWaiter
from adapters.http.replay import ReplayController
from adapters.http.session_stream import HitlController, StreamController
from adapters.http.sessions import SessionController
from adapters.http.skills import SkillController
from adapters.http.teams import InvitationController, TeamController
from adapters.http.tenant_reads import TenantReads, tenant_reads
from adapters.http.tools import ToolController
from adapters.http.uploads import SessionUploads, UploadController
from adapters.http.usage import Billing, UsageController
from adapters.http.user_erasure import ErasureController
from adapters.http.web_app import web_routes
from adapters.http.workspace_files import FileListing, workspace_files_router
from adapters.http.ws import push_socket
from adapters.mcp.server_mount import mcp_endpoint
from adapters.nats.session_feed import SessionFeed
from adapters.nats.signing_peers import keep_answering
from adapters.postgres.api_key_uses import FLUSH_EVERY, ApiKeyUses
from adapters.postgres.hash_chain import PostgresHashChain
from adapters.postgres.limit_counters import PostgresCounters
from adapters.postgres.login_failures import PostgresLoginFailures
from adapters.postgres.schema_lock import schema_lock
from adapters.postgres.store_tail import StoreTail
from adapters.services import Services
from adapters.settings import WEB_DIST
from adapters.system import Engine
from adapters.telemetry_runs import http_tracing, request_spans
from application.skills import SkillRegistry
from application.skills.service import Skills
from projections.accounts import AccountsView, WorkspaceDirectory
from projections.artifacts import ArtifactsView
from projections.budgets import BudgetsView
from projections.confirmations import ConfirmationsView
from projections.episodes import EpisodesView
from projections.memories import MemoriesView
from projections.sessions import SessionsView
from projections.working_memory import WorkingMemoryView
from projections.workspace_files import WorkspaceFilesView

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
    container: Container,
    services: Services,
    engine: Engine,
    *,
    limits: RateLimits | None = None,
    login_limits: LoginLimits | None = None,
    telemetry: TracerProvider | None = None,
) -> Litestar:
    """The HTTP API over a built container; background services run with the app.

    `limits` and `login_limits` default to the settings' (tests pass their own); with
    `telemetry`, each request is a span (`adapters/telemetry_runs.py`).
    """
    s = container.settings
    limits = limits or RateLimits(
        requests_per_minute=s.rate_limit_per_minute,
        streams_per_user=s.max_streams_per_user,
        uploads_per_minute=s.uploads_per_minute,
        counters=PostgresCounters.of(container),  # shared by every API replica
        bridge=container.bridge,
    )
    login_limits = login_limits or LoginLimits(
        attempts=s.login_attempts,
        failures=PostgresLoginFailures.of(container),  # shared by every API replica
        bridge=container.bridge,
    )
    logs = {name: _log_recorder(container, name) for name in container.views}
    waiter = ViewWaiter(
        container.database_url,
        {n: v.channel for n, v in container.views.items()},
        {n: log.max_notification_id for n, log in logs.items()},
        container.bridge,
    )
    reads = tenant_reads(container)  # the API role's pool: the handlers' read models
    reading = reads.container(container)
    views = _read_models(reading, waiter)
    access = Access(container.sessions, container.accounts, container.bridge)
    probes = Probes(
        container.recorder, container.views, services, container.bridge, waiter, logs,
        container.checkpoints,
    )  # fmt: skip
    factory = container.sessions.factory
    assert isinstance(factory, PostgresFactory)
    idempotency = IdempotencyStore(factory.datastore)
    key_uses = ApiKeyUses(factory.datastore)
    recorder = container.recorder
    tail = StoreTail(
        container.database_url, table=recorder.events_table_name, channel=recorder.channel_name
    )  # streams hear of commits that NATS does not bring them
    feed = _session_feed(container, services, tail)
    api = _api(reading, feed, engine, views, access, probes, key_uses)
    mcp_route, mcp_sessions = mcp_endpoint(api)

    @asynccontextmanager
    async def lifespan(_: Litestar) -> AsyncIterator[None]:
        await container.bridge(
            _create_tables, container, idempotency, key_uses, reads
        )  # fmt: skip
        counting = asyncio.create_task(_flush_key_uses(key_uses, container), name="key uses")
        waiter.start()
        tail.start()
        await services.start(wait_for_nats=False)
        # An API replica beside workers drives no run: the workers' sweep recovers them.
        recovery = (
            asyncio.create_task(recover_runs(container, engine), name="recover runs")
            if engine.scheduler.dispatch is None
            else None
        )
        secret = container.settings.signing_secret()
        signing = asyncio.create_task(
            keep_answering(lambda: services.nats, container.settings.nats_stream, secret)
        )  # peers starting later check that they sign with the same secret
        try:
            async with mcp_sessions():
                yield
        finally:
            feed.close()  # open streams end; their clients resume from their last id
            signing.cancel()
            counting.cancel()
            await container.bridge(key_uses.flush)
            if recovery is not None:
                recovery.cancel()
            await engine.scheduler.close()  # runs stay active in the log; the next start resumes
            await waiter.stop()
            await tail.stop()
            await services.stop()
            reads.close()

    app = Litestar(
        route_handlers=[*routes(container.files.max_bytes, s.web_dir), mcp_route],
        dependencies={"api": Provide(_constant(api), sync_to_thread=False)},  # the only one
        # Outermost first: metrics see every answer; limits and idempotency know the user.
        middleware=[
            *request_spans(telemetry),  # inside the request's span, outside everything else
            MetricsMiddleware(metrics := Metrics(probes, limits)),
            DefineMiddleware(BearerTokenAuthentication, exclude=PUBLIC),
            RateLimitMiddleware(limits),
            IdempotencyMiddleware(idempotency, container.bridge),
        ],
        exception_handlers=EXCEPTION_HANDLERS,  # type: ignore[arg-type]
        cors_config=cors_config(s),  # outside all of the above: preflights need no token
        lifespan=[lifespan],
        on_startup=[log_redaction.install],  # no access token reaches a log
        # The process configured logging (adapters/json_logs.py): litestar's own config
        # would replace the root logger's handler, its format and its level.
        logging_config=None,
        on_shutdown=[idempotency.close],  # this process's Idempotency-Key leases
        request_max_body_size=MAX_BODY,
        request_class=JsonRequest,  # a body that is not JSON answers 400 saying where
        openapi_config=openapi_config(),
        plugins=http_tracing(telemetry),
    )
    complete(app.openapi_schema)
    app.state.access = access
    app.state.login_limits = login_limits  # the login route counts failures with them
    app.state.key_uses = key_uses  # the authentication middleware counts each key's uses
    app.state.metrics = metrics
    app.state.waiter = waiter
    app.state.approval_wait = container.settings.approval_wait  # chat streams across approvals
    app.state.uploads = SessionUploads(factory.datastore)  # which blobs each session may cite
    app.state.feed = feed
    return app


def _create_tables(
    container: Container, idempotency: IdempotencyStore, key_uses: ApiKeyUses, reads: TenantReads
) -> None:
    with schema_lock(container.database_url):  # other replicas may be starting at once
        idempotency.create_table()
        key_uses.create_table()
    reads.prepare(container)  # row-level security for the handlers' read models


async def _flush_key_uses(key_uses: ApiKeyUses, container: Container) -> None:
    """Write the API keys' use counts every few seconds (Postgres away: next time)."""
    while True:
        await asyncio.sleep(FLUSH_EVERY)
        try:
            await container.bridge(key_uses.flush)
        except Exception as e:  # kept in memory for the next flush
            log.warning("could not write API key uses: %s", e)


def end_streams(app: Litestar) -> None:
    """End every open SSE stream now (shutting down); a client resumes from its last id."""
    feed = app.state.feed
    assert isinstance(feed, SessionFeed)
    feed.close()


def _session_feed(
    container: Container, services: Services, tail: StoreTail | None = None
) -> SessionFeed:
    return SessionFeed(
        sessions=container.sessions,
        bridge=container.bridge,
        connection=lambda: services.nats,
        stream=container.settings.nats_stream,
        tail=tail,
    )


def _read_models(container: Container, waiter: ViewWaiter) -> ReadModels:
    sessions, memory, confirmations = (
        container.views["sessions"],
        container.views["working_memory"],
        container.views["confirmations"],
    )
    assert isinstance(sessions, SessionsView)
    assert isinstance(memory, WorkingMemoryView)
    assert isinstance(confirmations, ConfirmationsView)
    return ReadModels(sessions, memory, confirmations, waiter)


def _accounts_view(container: Container) -> AccountsView:
    view = container.views[AccountsView.name]
    assert isinstance(view, AccountsView)
    return view


def _budgets_view(container: Container) -> BudgetsView:
    view = container.views[BudgetsView.name]
    assert isinstance(view, BudgetsView)
    return view


def _artifact_lookup(container: Container, waiter: ViewWaiter, access: Access) -> ArtifactLookup:
    view = container.views[ArtifactsView.name]
    assert isinstance(view, ArtifactsView)
    return ArtifactLookup(view, waiter, access, container.bridge)


def _file_listing(container: Container, waiter: ViewWaiter) -> FileListing:
    view = container.views[WorkspaceFilesView.name]
    assert isinstance(view, WorkspaceFilesView)
    return FileListing(view, waiter, container.bridge)


def _memory(container: Container, waiter: ViewWaiter) -> MemoryApi:
    """Long-term memory (`/memories`)."""
    view = container.views[MemoriesView.name]
    assert isinstance(view, MemoriesView)
    return MemoryApi(container.memories, container.memory_access, view, waiter, container.bridge)


def _episodes(container: Container, waiter: ViewWaiter) -> Episodes:
    """Episodic search (`/search`)."""
    view = container.views[EpisodesView.name]
    assert isinstance(view, EpisodesView)
    return Episodes(view, waiter, container.bridge)


def _log_recorder(container: Container, view: str) -> PostgresApplicationRecorder:
    recorder = container.log_of(view).recorder
    assert isinstance(recorder, PostgresApplicationRecorder)
    return recorder


def _api(
    container: Container, feed: SessionFeed, engine: Engine, views: ReadModels, access: Access,
    probes: Probes, key_uses: ApiKeyUses,
) -> Api:  # fmt: skip
    return Api(
        sessions=container.sessions,
        accounts=container.accounts,
        bridge=container.bridge,
        views=views,
        access=access,
        feed=feed,
        scheduler=engine.scheduler,
        manual=engine.manual,
        tools=engine.runner.tools,
        skills=engine.runner.skills or Skills(SkillRegistry(())),
        blobs=engine.blobs,
        workspace_files=container.files,
        probes=probes,
        workspaces=WorkspaceDirectory(_accounts_view(container), container.accounts),
        billing=Billing(container.usage, _budgets_view(container), views.waiter),
        artifacts=_artifact_lookup(container, views.waiter, access),
        previews=engine.previews,
        regenerator=engine.regenerator,
        decks=DeckPages(container.sessions, container.bridge, engine.previews),
        file_listing=_file_listing(container, views.waiter),
        episodes=_episodes(container, views.waiter),
        memory=_memory(container, views.waiter),
        key_uses=key_uses,
        cursors=Cursors.of(container.settings.signing_secret()),
        chain=PostgresHashChain(container.recorder),
        erasure=container.erasure,
        mcp_operator_file=container.settings.mcp_servers_file,
        mcp_probe_timeout=min(10.0, float(container.settings.mcp_timeout)),
    )


def _constant(value: object) -> Callable[[], object]:
    def provide() -> object:
        return value

    return provide
