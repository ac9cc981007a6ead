"""The composition root: the one place that picks concrete adapters.

`bootstrap` wires a whole process on Postgres and NATS; `bootstrap_engine` wires the
engine on the in-memory event store (unit tests, replay, benches). Both build every
part from the settings, except what the caller passes in its place: a keyword left
`None` means "build the real one". Nothing here runs at import time. The parts are
built in `parts`, the in-memory stores in `in_memory`, the split layout's roles in
`roles`.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING
from uuid import UUID

from eventsourcing.postgres import (
    PostgresFactory,
    PostgresTrackingRecorder,
)

from adapters.bootstrap.background import Background, build_services
from adapters.bootstrap.http import build_http
from adapters.bootstrap.in_memory import in_memory_sessions
from adapters.bootstrap.parts import (
    build_blobs,
    build_engine_settings,
    build_llm,
    build_skills,
    build_tools,
    embedding_models,
    load_price_table,
)
from adapters.config.secrets import Sealer
from adapters.config.settings import Settings
from adapters.container import Container, recorder_of
from adapters.deltas import NullDeltaSink
from adapters.llm.tokens import TiktokenCounter
from adapters.mcp.client import McpConnections
from adapters.mcp.operator import operator_servers
from adapters.nats.link import NatsLink
from adapters.nats.live import NatsDeltaSink
from adapters.observability.telemetry import traced_llm, traced_tools, tracer_provider_from_env
from adapters.observability.telemetry_runs import run_tracing
from adapters.personal_keys import UserKeys
from adapters.postgres.advisory_locks import AdvisoryLocks, SessionRunLocks
from adapters.postgres.async_recorder import AsyncRecorder
from adapters.postgres.context_snapshots import PostgresContextSnapshots
from adapters.postgres.eventstore import eventstore_env
from adapters.postgres.loop_pool import LoopPool
from adapters.postgres.personal_copies import PostgresPersonalCopies
from adapters.postgres.recorder import LockedInsertRecorder
from adapters.postgres.schema_lock import schema_lock
from adapters.postgres.spend_reader import ThreadSpendReader
from adapters.postgres.user_keys import PostgresKeyStore
from adapters.slides.office import Office
from adapters.slides.previews import SlidePreviews
from adapters.slides.renderer import PptxRenderer
from adapters.system import Engine, System
from application.account_store import as_of, read_as_of
from application.accounts import AccountService
from application.auto_memory import AutoMemory
from application.bridge import SyncBridge
from application.budget_guard import BudgetEnforcer, BudgetGuard
from application.context_snapshots import InMemoryContextSnapshots
from application.decks import DeckEditor
from application.engine_settings import EngineSettings
from application.erasure import Erasure
from application.loop_writes import StoreBusy
from application.manual_tools import ManualTools
from application.mcp_tools import McpClient
from application.memories import Memories
from application.memory_access import MemoryAccess
from application.memory_recall import MemoryRecall, RunMemory
from application.ports import LLM, BlobStore, DeltaSink, RunLocks, TokenCounter
from application.replay import ReplayEngine
from application.replay_oracle import ReplayBudgets
from application.runner import AgentRunner
from application.runs import RunScheduler
from application.sessions import SessionService
from application.skills.service import Skills
from application.slide_regeneration import RegenerationSettings, SlideRegenerator
from application.snapshot_port import ContextSnapshots
from application.tools.base import AnyTool
from application.tools.registry import ToolRegistry
from application.workspace_files import WorkspaceFiles
from domain.mcp_servers import McpServerConfig
from domain.pricing import PriceTable
from projections.accounts import AccountsView
from projections.artifacts import ArtifactsView
from projections.budgets import BudgetsView
from projections.confirmations import ConfirmationsView
from projections.episodes import EpisodesView
from projections.memories import MemoriesView
from projections.read_models import ReadModels
from projections.sessions import SessionsView
from projections.usage import UsageView
from projections.view import TRACKING_TABLE
from projections.working_memory import WorkingMemoryView
from projections.workspace_files import WorkspaceFilesView

if TYPE_CHECKING:  # the SDK is imported only when spans are exported
    from opentelemetry.sdk.trace import TracerProvider


Clock = Callable[[], float]  # seconds since the epoch


def bootstrap(
    settings: Settings,
    *,
    database_url: str,
    nats_url: str,
    llm: LLM | None = None,
    tools: Iterable[AnyTool] | None = None,
    blobs: BlobStore | None = None,
    deltas: DeltaSink | None = None,
    counter: TokenCounter | None = None,
    clock: Clock | None = None,
    engine_settings: EngineSettings | None = None,
    prices: PriceTable | None = None,
    background: Background | None = None,
) -> System:
    """The whole system on the servers at `database_url` and `nats_url` (tables created).

    `tools` replaces the built-in tools (pass `[*build_tools(settings), extra]` to add
    one); `deltas` defaults to core NATS; `clock` is the accounts' (token expiry).
    `background` says which background duties run here (all of them by default); they
    are built, not started: `await system.services.start()`.
    """
    blobs = blobs if blobs is not None else build_blobs(settings)
    with schema_lock(database_url):  # other roles may be starting at the same moment
        container = _open_store(settings, database_url, nats_url, clock or time.time, blobs)
        factory = container.sessions.factory
        assert isinstance(factory, PostgresFactory)
        snapshots = PostgresContextSnapshots(factory.datastore)
        snapshots.create_table()
    link = NatsLink(nats_url)
    services = build_services(container, link, background or Background())
    live = deltas or NatsDeltaSink(link, settings.nats_stream)
    telemetry = tracer_provider_from_env(os.environ)  # one per process, closed with it
    spend = ThreadSpendReader(container.usage, container.bridge)
    enforcer = BudgetEnforcer(spend, container.accounts, container.bridge)
    engine = bootstrap_engine(
        settings, sessions=container.sessions, bridge=container.bridge, llm=llm,
        tools=tools, blobs=blobs, deltas=live, counter=counter, engine_settings=engine_settings,
        prices=prices, budgets=enforcer, telemetry=telemetry, files=container.files,
        snapshots=snapshots, run_locks=SessionRunLocks(AdvisoryLocks(database_url)),
        memories=container.memories, memory_access=container.memory_access,
        mcp=mcp_connections(settings, container),
    )  # fmt: skip
    return System(container, services, engine, build_http(container, services, engine), telemetry)


def mcp_connections(settings: Settings, container: Container) -> McpConnections:
    """The MCP servers of each workspace (the operator's file's, then its own), connected
    by the process that runs the agent."""
    given = operator_servers(settings.mcp_servers_file)

    async def servers_of(workspace_id: UUID) -> list[McpServerConfig]:
        # As of the accounts log's head: while it has not moved, no read of the store
        # (a workspace without servers of its own was two reads at every run's start).
        servers, log = container.accounts.workspace_mcp_servers, container.accounts_log
        head = read_as_of()  # a run started by a request: the request's head
        if head is None and log is not None:
            with contextlib.suppress(StoreBusy):  # the loop's pool busy: no head
                head = await log.max_notification_id() or 0
        with as_of(head) if head is not None else contextlib.nullcontext():
            own = await container.bridge(servers, workspace_id)
        names = {s.name for s in given}
        return [*given, *(s for s in own if s.name not in names)]

    return McpConnections(servers_of, timeout=float(settings.mcp_timeout))


def bootstrap_engine(
    settings: Settings,
    *,
    sessions: SessionService | None = None,
    bridge: SyncBridge | None = None,
    llm: LLM | None = None,
    tools: Iterable[AnyTool] | None = None,
    blobs: BlobStore | None = None,
    deltas: DeltaSink | None = None,
    counter: TokenCounter | None = None,
    engine_settings: EngineSettings | None = None,
    prices: PriceTable | None = None,
    budgets: BudgetGuard | None = None,
    telemetry: TracerProvider | None = None,
    skills: Skills | None = None,
    files: WorkspaceFiles | None = None,
    snapshots: ContextSnapshots | None = None,
    run_locks: RunLocks | None = None,
    memories: Memories | None = None,
    memory_access: MemoryAccess | None = None,
    mcp: McpClient | None = None,
) -> Engine:
    """The engine alone, on `sessions` (default: a new in-memory event store).

    Deltas default to nowhere; a bridge built here is the caller's to close
    (`engine.bridge.close()`). Without `files` the built-in file tools answer that
    workspace files are not configured. Without `memories` a run recalls nothing and
    keeps nothing, and the memory tools answer that memory is not configured.
    """
    sessions = sessions or in_memory_sessions()
    bridge = bridge or SyncBridge(4)
    blobs = blobs if blobs is not None else build_blobs(settings)
    runner = AgentRunner(
        sessions=sessions,
        bridge=bridge,
        llm=traced_llm(llm if llm is not None else build_llm(settings), telemetry),
        tools=ToolRegistry(
            traced_tools(
                build_tools(settings, files=files, memories=memories, memory_access=memory_access)
                if tools is None
                else tools,
                telemetry,
            )
        ),
        blobs=blobs,
        counter=counter if counter is not None else TiktokenCounter(),
        deltas=deltas if deltas is not None else NullDeltaSink(),
        settings=engine_settings or build_engine_settings(settings),
        prices=prices if prices is not None else load_price_table(settings),
        budgets=budgets,
        skills=skills if skills is not None else build_skills(settings),
        snapshots=snapshots if snapshots is not None else InMemoryContextSnapshots(),
        memory=RunMemory(MemoryRecall(memories), AutoMemory(memories)) if memories else None,
        mcp=mcp,
        tracing=run_tracing(telemetry),
    )
    manual = ManualTools(runner.tool_calls, sessions, bridge)
    scheduler = RunScheduler(runner, sessions, bridge, manual, locks=run_locks)
    regenerator = SlideRegenerator(
        sessions=sessions, bridge=bridge, llm=runner.llm, editor=DeckEditor(PptxRenderer()),
        blobs=blobs, prices=runner.prices, budgets=runner.budgets, counter=runner.counter,
        settings=RegenerationSettings(runner.settings.model, cache_ttl=runner.settings.cache_ttl),
    )  # fmt: skip
    previews = SlidePreviews(Office(settings.soffice), blobs)
    return Engine(runner, scheduler, blobs, manual, sessions, bridge, regenerator, previews)


def replay_engine(like: AgentRunner, *, tools: Iterable[AnyTool] | None = None) -> ReplayEngine:
    """What `application.replay.replay` drives: an engine like `like` (its tools unless
    `tools` is given, its blobs, counter and limits) on a new in-memory store."""

    def build(llm: LLM) -> AgentRunner:
        return bootstrap_engine(
            Settings(),  # unused: every part comes from `like`
            llm=llm,
            tools=like.tools if tools is None else tools,
            blobs=like.tool_calls.blobs,
            counter=like.counter,
            engine_settings=like.settings,
            prices=like.prices,
            budgets=ReplayBudgets(llm),
            skills=like.skills,
        ).runner

    return build


def _open_store(
    settings: Settings, database_url: str, nats_url: str, clock: Clock, blobs: BlobStore
) -> Container:
    """Open the event store and the read models (creating their tables)."""
    env = eventstore_env(
        database_url, pool_size=settings.db_pool_size, max_overflow=settings.db_max_overflow
    )
    sessions = SessionService(env=env)
    factory = sessions.factory
    assert isinstance(factory, PostgresFactory)
    events = sessions.recorder
    assert isinstance(events, LockedInsertRecorder)
    pool = LoopPool(
        database_url,
        size=settings.db_async_pool_size,
        timeout=settings.db_async_timeout,
        name="tokendance-loop",
    )
    sessions.loop_recorder = AsyncRecorder(pool, events)
    models = embedding_models(settings)
    store = factory.datastore
    views = ReadModels(
        sessions=SessionsView(store),
        working_memory=WorkingMemoryView(store),
        confirmations=ConfirmationsView(store),
        accounts=AccountsView(store),
        usage=UsageView(store),
        budgets=BudgetsView(store),
        artifacts=ArtifactsView(store),
        workspace_files=WorkspaceFilesView(store),
        memories=MemoriesView(store, models),
        episodes=EpisodesView(store, models),
    )
    checkpoints = PostgresTrackingRecorder(factory.datastore, tracking_table_name=TRACKING_TABLE)
    key_store = PostgresKeyStore(factory.datastore)
    for recorder in (*views.values(), checkpoints):
        recorder.create_table()
    key_store.create_table()
    sealer = Sealer.from_settings(settings.master_key, settings.data_dir, settings.master_key_file)
    personal_keys = UserKeys(key_store, sealer)
    sessions.seal_with(personal_keys)
    accounts = AccountService(
        env=eventstore_env(database_url, pool_size=2, max_overflow=settings.db_max_overflow),
        jwt_secret=settings.signing_secret(),
        access_ttl=settings.access_ttl,
        clock=clock,
        invitation_ttl=settings.invitation_ttl,
    )
    accounts.sealer = sealer
    accounts.seal_with(personal_keys)
    if broken := accounts.unopenable_mcp_secrets():  # the wrong key: say so before serving
        raise SystemExit(
            f"TOKENDANCE_MASTER_KEY cannot open {len(broken)} stored secret(s), e.g. "
            f"{broken[0]}; list the key that sealed them (after the new one)"
        )
    if unopened := personal_keys.unopenable():  # the wrong key: say so before serving
        raise SystemExit(
            f"TOKENDANCE_MASTER_KEY cannot open the personal keys of {len(unopened)} "
            f"user(s), e.g. {unopened[0]}; list the key that sealed them (after the new one)"
        )
    bridge = SyncBridge(settings.thread_pool_size)
    files = WorkspaceFiles(accounts, blobs, bridge, max_bytes=settings.max_upload_bytes)
    memories = Memories(accounts, views.memories, bridge)
    copies = PostgresPersonalCopies(
        factory.datastore,
        [recorder_of(sessions), recorder_of(accounts)],
        [f"{app.name}_snapshots" for app in (sessions, accounts)],
    )
    erasure = Erasure(accounts, sessions, personal_keys, copies, blobs, bridge)
    accounts_events = accounts.recorder
    assert isinstance(accounts_events, LockedInsertRecorder)
    return Container(
        settings, database_url, nats_url, sessions, views, checkpoints, bridge, accounts, files,
        memories, MemoryAccess(accounts), erasure, pool, AsyncRecorder(pool, accounts_events),
    )  # fmt: skip
