"""The HTTP API's parts (`adapters.http.parts.HttpParts`), built from a wired process:
the handlers' one dependency and the middleware's limits, stores and metrics. Nothing
here connects or starts anything: the app's lifespan does (`HttpParts.serving`)."""

from __future__ import annotations

from eventsourcing.postgres import PostgresFactory

from adapters.container import Container, recorder_of
from adapters.http.access import Access
from adapters.http.deps import Api
from adapters.http.middleware.idempotency_keys import IdempotencyStore
from adapters.http.middleware.limits import RateLimits
from adapters.http.middleware.login_limits import LoginLimits
from adapters.http.middleware.metrics import Metrics
from adapters.http.parts import HttpParts
from adapters.http.reads.artifact_lookup import ArtifactLookup
from adapters.http.reads.billing import Billing
from adapters.http.reads.cursors import Cursors
from adapters.http.reads.deck_versions import DeckPages
from adapters.http.reads.episodes import Episodes
from adapters.http.reads.file_listing import FileListing
from adapters.http.reads.memory_api import MemoryApi
from adapters.http.reads.probes import Probes
from adapters.http.reads.read_your_writes import ViewWaiter
from adapters.http.reads.tenant_reads import tenant_reads
from adapters.mcp.server_mount import mcp_endpoint
from adapters.nats.session_feed import SessionFeed
from adapters.postgres.api_key_uses import ApiKeyUses
from adapters.postgres.hash_chain import PostgresHashChain
from adapters.postgres.limit_counters import PostgresCounters
from adapters.postgres.login_failures import PostgresLoginFailures
from adapters.postgres.session_uploads import SessionUploads
from adapters.postgres.store_tail import StoreTail
from adapters.services import Services
from adapters.system import Engine
from application.skills import SkillRegistry
from application.skills.service import Skills
from projections.accounts import WorkspaceDirectory


def build_http(container: Container, services: Services, engine: Engine) -> HttpParts:
    """The API's parts on `container`: its read models as the API role (row-level
    security), its limits and login failures counted in Postgres (shared by every
    replica), its streams fed by NATS and the store's tail."""
    c, s = container, container.settings
    factory = c.sessions.factory
    assert isinstance(factory, PostgresFactory)
    logs = {name: recorder_of(c.log_of(name)) for name in c.views}
    waiter = ViewWaiter(
        c.database_url,
        {n: v.channel for n, v in c.views.items()},
        {n: log.max_notification_id for n, log in logs.items()},
        c.bridge,
    )
    reads = tenant_reads(c)  # the API role's pool: the handlers' read models
    reading = reads.container(c)
    views = reading.views
    counters = PostgresCounters.of(c)
    limits = RateLimits(
        requests_per_minute=s.rate_limit_per_minute,
        streams_per_user=s.max_streams_per_user,
        uploads_per_minute=s.uploads_per_minute,
        counters=counters,
        bridge=c.bridge,
    )
    head = c.accounts_log.max_notification_id if c.accounts_log is not None else None
    access = Access(c.sessions, c.accounts, c.bridge, head)
    probes = Probes(c.recorder, c.views, services, c.bridge, waiter, logs, c.checkpoints)
    recorder = c.recorder
    tail = StoreTail(
        c.database_url, table=recorder.events_table_name, channel=recorder.channel_name
    )
    feed = session_feed(c, services, tail)
    api = Api(
        sessions=c.sessions,
        accounts=c.accounts,
        bridge=c.bridge,
        views=views,
        waiter=waiter,
        access=access,
        feed=feed,
        scheduler=engine.scheduler,
        manual=engine.manual,
        tools=engine.runner.tools,
        skills=engine.runner.skills or Skills(SkillRegistry(())),
        blobs=engine.blobs,
        workspace_files=c.files,
        probes=probes,
        workspaces=WorkspaceDirectory(views.accounts, c.accounts),
        billing=Billing(reading.usage, views.budgets, waiter),
        artifacts=ArtifactLookup(views.artifacts, waiter, access, c.bridge),
        previews=engine.previews,
        regenerator=engine.regenerator,
        decks=DeckPages(c.sessions, c.bridge, engine.previews),
        file_listing=FileListing(views.workspace_files, waiter, c.bridge),
        episodes=Episodes(views.episodes, waiter, c.bridge),
        memory=MemoryApi(reading.memories, c.memory_access, views.memories, waiter, c.bridge),
        key_uses=ApiKeyUses(factory.datastore),
        cursors=Cursors.of(s.signing_secret()),
        chain=PostgresHashChain(c.recorder),
        erasure=c.erasure,
        login_limits=LoginLimits(
            attempts=s.login_attempts, failures=PostgresLoginFailures.of(c), bridge=c.bridge
        ),
        uploads=SessionUploads(factory.datastore),
        metrics=Metrics(probes, limits),
        approval_wait=float(s.approval_wait),
        mcp_operator_file=s.mcp_servers_file,
        mcp_probe_timeout=min(10.0, float(s.mcp_timeout)),
    )
    mcp_route, mcp_sessions = mcp_endpoint(api)
    return HttpParts(
        api, limits, IdempotencyStore(factory.datastore), reads, tail, mcp_route, mcp_sessions,
        c, services, engine,
    )  # fmt: skip


def session_feed(
    container: Container, services: Services, tail: StoreTail | None = None
) -> SessionFeed:
    """The sessions' events and live deltas for the open streams: from NATS while it is
    there, from the store's `tail` while it is not."""
    return SessionFeed(
        sessions=container.sessions,
        bridge=container.bridge,
        connection=services.link,
        stream=container.settings.nats_stream,
        tail=tail,
    )
