"""The composition root: the one place that picks concrete adapters.

`bootstrap` wires a whole process on Postgres and NATS; `bootstrap_engine` wires the
engine on the in-memory event store (unit tests, replay, benches). Both build every
part from the settings, except what the caller passes in its place: a keyword left
`None` means "build the real one". Nothing here runs at import time.
"""

from __future__ import annotations

import functools
import logging
import os
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING
from uuid import UUID

from argon2 import PasswordHasher
from eventsourcing.application import Application
from eventsourcing.postgres import (
    PostgresFactory,
    PostgresTrackingRecorder,
)
from nats.js import JetStreamContext

from adapters.blobs.filesystem import FilesystemBlobStore
from adapters.blobs.s3 import S3BlobStore, S3ConfigError
from adapters.container import Container
from adapters.deltas import NullDeltaSink
from adapters.documents.pdf import ReportLabDocumentRenderer
from adapters.embeddings import EmbedderUnavailable, build_embedder, embedder_for
from adapters.llm.scripted import load_llm_spec
from adapters.llm.tokens import TiktokenCounter
from adapters.llm.unconfigured import HOW_TO_CONFIGURE, UnconfiguredLLM
from adapters.nats.live import NatsDeltaSink
from adapters.nats.run_queue import RunQueue
from adapters.nats.stream import EventStream
from adapters.postgres.active_runs import active_runs
from adapters.postgres.advisory_locks import AdvisoryLocks, SessionRunLocks
from adapters.postgres.context_snapshots import PostgresContextSnapshots
from adapters.postgres.eventstore import eventstore_env
from adapters.postgres.schema_lock import schema_lock
from adapters.price_file import PriceFileError, load_prices
from adapters.services import Services
from adapters.settings import Settings
from adapters.slides.office import Office
from adapters.slides.previews import SlidePreviews
from adapters.slides.renderer import PptxRenderer
from adapters.system import Engine, System
from adapters.telemetry import traced_llm, traced_tools, tracer_provider_from_env
from adapters.web.page_reader import HttpPageReader
from adapters.web.url_guard import AllowList
from adapters.web_search import build_web_search
from adapters.worker import Worker, WorkerSettings
from application.accounts import THIRTY_DAYS, AccountService
from application.auto_memory import AutoMemory
from application.bridge import SyncBridge
from application.budget_guard import BudgetEnforcer, BudgetGuard
from application.context_snapshots import InMemoryContextSnapshots
from application.decks import DeckEditor
from application.manual_tools import ManualTools
from application.memories import Memories
from application.memory_access import MemoryAccess
from application.memory_recall import MemoryRecall, RunMemory
from application.ports import (
    LLM,
    BlobStore,
    ContextSnapshots,
    DeltaSink,
    Embedder,
    LLMNotConfigured,
    RunLocks,
    Sandbox,
    SandboxLimits,
    TokenCounter,
)
from application.replay import ReplayEngine
from application.replay_oracle import ReplayBudgets
from application.runner import AgentRunner, EngineSettings
from application.runs import RunScheduler
from application.sessions import SessionService
from application.skills import SkillMatcher, SkillRegistry, builtin_skills_dir
from application.skills.service import Skills
from application.slide_regeneration import RegenerationSettings, SlideRegenerator
from application.tools.activate_skill import ActivateSkill
from application.tools.base import AnyTool
from application.tools.code_execute import CodeExecute
from application.tools.create_doc import CreateDoc
from application.tools.files import file_tools
from application.tools.memory import memory_tools
from application.tools.notes import NoteProgress, RecordFinding, UpdatePlan
from application.tools.read_source import ReadSource
from application.tools.read_url import ReadUrl
from application.tools.registry import ToolRegistry
from application.tools.skill_files import ReadSkillFile
from application.tools.skill_script import RunSkillScript
from application.tools.slides import deck_tools
from application.tools.web_search import WebSearchTool
from application.workspace_files import WorkspaceFiles
from domain.pricing import PriceTable
from projections.accounts import AccountsView
from projections.artifacts import ArtifactsView
from projections.budgets import BudgetsView
from projections.confirmations import ConfirmationsView
from projections.episodes import EpisodesView
from projections.memories import MemoriesView
from projections.memory_vectors import EmbeddingModels
from projections.sessions import SessionsView
from projections.usage import UsageView
from projections.view import TRACKING_TABLE, View
from projections.working_memory import WorkingMemoryView
from projections.workspace_files import WorkspaceFilesView
from sandbox.bubblewrap import BubblewrapSandbox
from sandbox.docker import DockerSandbox

if TYPE_CHECKING:  # the SDK is imported only when spans are exported
    from opentelemetry.sdk.trace import TracerProvider

log = logging.getLogger(__name__)

Clock = Callable[[], float]  # seconds since the epoch
StreamFactory = Callable[[JetStreamContext, str], EventStream]
IN_MEMORY = {"PERSISTENCE_MODULE": "eventsourcing.popo"}


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
    relay: bool = True,
    projections: bool = True,
    stream_factory: StreamFactory | None = None,
    relay_batch_size: int = 256,
    prices: PriceTable | None = None,
    standby: bool = False,
) -> System:
    """The whole system on the servers at `database_url` and `nats_url` (tables created).

    `tools` replaces the built-in tools (pass `[*build_tools(settings), extra]` to add
    one); `deltas` defaults to core NATS; `clock` is the accounts' (token expiry).
    The background services are built, not started: `await system.services.start()`.
    `standby`: other processes run the same projections (one is active per view).
    """
    blobs = blobs if blobs is not None else build_blobs(settings)
    with schema_lock(database_url):  # other roles may be starting at the same moment
        container = _open_store(settings, database_url, nats_url, clock or time.time, blobs)
        factory = container.sessions.factory
        assert isinstance(factory, PostgresFactory)
        snapshots = PostgresContextSnapshots(factory.datastore)
        snapshots.create_table()
    services = Services(
        container,
        relay_enabled=relay,
        projections_enabled=projections,
        relay_batch_size=relay_batch_size,
        stream_factory=stream_factory or EventStream,
        standby=standby,
    )
    live = deltas or NatsDeltaSink(lambda: services.nats, settings.nats_stream)
    telemetry = tracer_provider_from_env(os.environ)  # one per process, closed with it
    enforcer = BudgetEnforcer(container.usage, container.accounts, container.bridge)
    engine = bootstrap_engine(
        settings, sessions=container.sessions, bridge=container.bridge, llm=llm,
        tools=tools, blobs=blobs, deltas=live, counter=counter, engine_settings=engine_settings,
        prices=prices, budgets=enforcer, telemetry=telemetry, files=container.files,
        snapshots=snapshots, run_locks=SessionRunLocks(AdvisoryLocks(database_url)),
        memories=container.memories, memory_access=container.memory_access,
    )  # fmt: skip
    return System(container, services, engine, telemetry)


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


def in_memory_sessions() -> SessionService:
    """The session service on a new, empty in-memory event store."""
    return SessionService(env=IN_MEMORY)


def in_memory_accounts(
    *,
    jwt_secret: str,
    access_ttl: int = 3600,
    refresh_ttl: int = THIRTY_DAYS,
    clock: Clock | None = None,
    hasher: PasswordHasher | None = None,
) -> AccountService:
    """The accounts service on a new, empty in-memory event store."""
    return AccountService(
        env=IN_MEMORY,
        jwt_secret=jwt_secret,
        access_ttl=access_ttl,
        refresh_ttl=refresh_ttl,
        clock=clock or time.time,
        hasher=hasher,
    )


def build_llm(settings: Settings) -> LLM:
    """The model the settings name: scripted, Anthropic (key found), or none."""
    if settings.llm:
        return load_llm_spec(settings.llm, counter=TiktokenCounter())
    from adapters.llm.anthropic import AnthropicLLM  # the SDK takes seconds to import

    try:
        return AnthropicLLM.from_env(model=settings.model, max_tokens=settings.max_tokens)
    except LLMNotConfigured:
        log.warning(HOW_TO_CONFIGURE)  # one line at start: what is missing, what to set
        return UnconfiguredLLM()


def build_tools(
    settings: Settings,
    *,
    files: WorkspaceFiles | None = None,
    memories: Memories | None = None,
    memory_access: MemoryAccess | None = None,
) -> list[AnyTool]:
    """The built-in tools, their ports injected (a tool that needs a client gets it here).

    Without `files` the file tools are there but answer that files are not configured;
    likewise the memory tools without `memories`."""
    search = build_web_search(settings.tavily_api_key, settings.tavily_url)
    reader = HttpPageReader(AllowList.parse(settings.fetch_allow))
    skills = build_skills(settings)
    sandbox, limits = build_sandbox(settings), sandbox_limits(settings)
    code = CodeExecute(
        sandbox, limits=limits, max_wall_seconds=settings.sandbox_max_timeout, files=files,
        allow_domains=settings.sandbox_allow_domains,
    )  # fmt: skip
    return [
        UpdatePlan(), RecordFinding(), NoteProgress(), WebSearchTool(search), ReadUrl(reader),
        ReadSource(),
        ActivateSkill(skills), ReadSkillFile(skills), CreateDoc(ReportLabDocumentRenderer()),
        *file_tools(files), code, RunSkillScript(sandbox, skills, limits=limits),
        *deck_tools(DeckEditor(PptxRenderer())),
        *memory_tools(memories, memory_access, memories.bridge if memories else None),
    ]  # fmt: skip


def build_sandbox(settings: Settings) -> Sandbox:
    """Where code runs: bubblewrap on this machine (work directories in the data
    directory), or a Docker-API engine running the sandbox image."""
    if settings.sandbox == "docker":
        return DockerSandbox(image=settings.sandbox_image)
    return BubblewrapSandbox(settings.data_dir / "sandbox")


def sandbox_limits(settings: Settings) -> SandboxLimits:
    seconds = settings.sandbox_timeout
    return SandboxLimits(
        wall_seconds=float(seconds), cpu_seconds=seconds,
        memory_bytes=settings.sandbox_memory_mb * 2**20, processes=settings.sandbox_processes,
    )  # fmt: skip


def build_blobs(settings: Settings) -> BlobStore:
    """The S3 store `TOKENDANCE_S3_URL` names, else the data directory's `blobs/`."""
    if settings.s3_url is None:
        return FilesystemBlobStore(settings.data_dir / "blobs")
    try:
        return S3BlobStore.connect(
            settings.s3_url, settings.s3_bucket, settings.s3_access_key or "",
            settings.s3_secret_key or "",
        )  # fmt: skip
    except S3ConfigError as e:
        raise SystemExit(f"TOKENDANCE_S3_URL: {e}") from None


def in_memory_files(blobs: BlobStore, bridge: SyncBridge, settings: Settings) -> WorkspaceFiles:
    """Workspace files on a new, empty in-memory event store (the engine alone)."""
    store = Application[UUID](env=IN_MEMORY)
    return WorkspaceFiles(store, blobs, bridge, max_bytes=settings.max_upload_bytes)


def build_skills(settings: Settings) -> Skills:
    """The built-in skills and `TOKENDANCE_SKILLS_DIR`'s, with their matcher (one per
    process and configuration: the embedding model loads once)."""
    return _skills(settings.skills_dir, settings.embedder, settings.skill_match_threshold)


@functools.cache
def _skills(skills_dir: Path | None, embedder: str, threshold: float) -> Skills:
    registry = SkillRegistry.discover(builtin_skills_dir(), skills_dir)
    return Skills(registry, SkillMatcher(registry, loaded_embedder(embedder), threshold=threshold))


def build_engine_settings(settings: Settings) -> EngineSettings:
    return EngineSettings(
        model=settings.model,
        max_tokens=settings.max_tokens,
        context_window=settings.context_window,
        max_iterations=settings.max_iterations,
        cache_ttl=settings.cache_ttl,
    )


def load_price_table(settings: Settings) -> PriceTable:
    """The price table `TOKENDANCE_PRICES` names (default: the bundled one); a file that
    does not load stops the start with where it is wrong."""
    try:
        return load_prices(settings.prices)
    except PriceFileError as e:
        raise SystemExit(f"TOKENDANCE_PRICES: {e}") from None


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
    models = embedding_models(settings)
    views: dict[str, View] = {
        v.name: v
        for v in (
            SessionsView(factory.datastore),
            WorkingMemoryView(factory.datastore),
            ConfirmationsView(factory.datastore),
            AccountsView(factory.datastore),
            UsageView(factory.datastore),
            BudgetsView(factory.datastore),
            ArtifactsView(factory.datastore),
            WorkspaceFilesView(factory.datastore),
            MemoriesView(factory.datastore, models),
            EpisodesView(factory.datastore, models),
        )
    }
    checkpoints = PostgresTrackingRecorder(factory.datastore, tracking_table_name=TRACKING_TABLE)
    for recorder in (*views.values(), checkpoints):
        recorder.create_table()
    accounts = AccountService(
        env=eventstore_env(database_url, pool_size=2, max_overflow=settings.db_max_overflow),
        jwt_secret=settings.signing_secret(),
        access_ttl=settings.access_ttl,
        clock=clock,
    )
    bridge = SyncBridge(settings.thread_pool_size)
    files = WorkspaceFiles(accounts, blobs, bridge, max_bytes=settings.max_upload_bytes)
    index = views[MemoriesView.name]
    assert isinstance(index, MemoriesView)
    memories = Memories(accounts, index, bridge)
    return Container(
        settings, database_url, nats_url, sessions, views, checkpoints, bridge, accounts, files,
        memories, MemoryAccess(accounts),
    )  # fmt: skip


def embedding_models(settings: Settings) -> EmbeddingModels:
    """The embedding models of memories and episodes: the configured one for new ones."""
    return EmbeddingModels(loaded_embedder(settings.embedder), embedder_for)


@functools.cache
def loaded_embedder(name: str) -> Embedder:
    """The embedder `name`, shared by memories, episodes and the skills' matcher (one per
    process: a model loads once); the hashing one, with a warning, if it cannot load."""
    try:
        return build_embedder(name)
    except EmbedderUnavailable as e:
        log.warning(
            "embedder %s unavailable (%s): memories, episodes and skills use the hashing "
            "embedder (skills are matched by keywords and hashed text only)", name, e,
        )  # fmt: skip
        return build_embedder("hashing")


def dispatch_runs_to_workers(system: System) -> RunQueue:
    """Make `system` an API replica: the runs it starts or resumes go to the workers."""
    queue = RunQueue(lambda: system.services.nats, system.settings.nats_runs_stream)
    system.engine.scheduler.dispatch = queue
    return queue


def build_worker(system: System) -> Worker:
    """A worker that drives `system`'s engine on runs from the work queue."""
    s, c = system.settings, system.container
    return Worker(
        engine=system.engine,
        queue=RunQueue(lambda: system.services.nats, s.nats_runs_stream),
        locks=SessionRunLocks(AdvisoryLocks(c.database_url)),
        recorder=c.recorder,
        mapper=c.sessions.mapper,
        settings=WorkerSettings(
            concurrency=s.worker_concurrency,
            ack_wait=float(s.run_ack_wait),
            max_deliveries=s.run_max_deliveries,
            sweep=float(s.run_sweep),
        ),
    )


async def recover_runs(container: Container, engine: Engine) -> int:
    """Resume the runs a previous process left active; how many.

    Read from the event store itself, not a read model that may be behind it, so no
    run that ended or started just before the restart is missed or resumed twice.
    """
    active = await container.bridge(active_runs, container.recorder, container.sessions.mapper)
    engine.scheduler.recover(active)
    return len(active)
