"""The composition root: the one place that picks concrete adapters.

`bootstrap` wires a whole process on Postgres and NATS; `bootstrap_in_memory` wires the
engine on the in-memory event store (unit tests, replay, benches). Both build every
part from the settings, except what the caller passes in its place: a keyword left
`None` means "build the real one". Nothing here runs at import time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass, field
from uuid import UUID

from eventsourcing.application import Application
from eventsourcing.postgres import (
    PostgresApplicationRecorder,
    PostgresFactory,
    PostgresTrackingRecorder,
)
from nats.aio.client import Client as NATS
from nats.js import JetStreamContext

from adapters.blobs.filesystem import FilesystemBlobStore
from adapters.deltas import NullDeltaSink
from adapters.llm.anthropic import AnthropicLLM
from adapters.llm.scripted import load_llm_spec
from adapters.llm.tokens import TiktokenCounter
from adapters.llm.unconfigured import UnconfiguredLLM
from adapters.nats.connection import connect_nats
from adapters.nats.feed import JetStreamFeed
from adapters.nats.live import NatsDeltaSink
from adapters.nats.relay import Relay
from adapters.nats.stream import EventStream
from adapters.postgres.active_runs import active_runs
from adapters.postgres.eventstore import eventstore_env
from adapters.settings import Settings
from application.accounts import AccountService
from application.bridge import SyncBridge
from application.manual_tools import ManualTools
from application.ports import LLM, BlobStore, DeltaSink, LLMNotConfigured, TokenCounter
from application.replay import ReplayEngine
from application.runner import AgentRunner, EngineSettings
from application.runs import RunScheduler
from application.sessions import SessionService
from application.tools.base import AnyTool
from application.tools.notes import NoteProgress, RecordFinding, UpdatePlan
from application.tools.registry import ToolRegistry
from projections.accounts import AccountsView
from projections.confirmations import ConfirmationsView
from projections.runner import ProjectionRunner
from projections.sessions import SessionsView
from projections.view import TRACKING_TABLE, ProjectionError, View
from projections.working_memory import WorkingMemoryView

log = logging.getLogger(__name__)

Clock = Callable[[], float]  # seconds since the epoch
StreamFactory = Callable[[JetStreamContext, str], EventStream]
IN_MEMORY = {"PERSISTENCE_MODULE": "eventsourcing.popo"}


@dataclass
class Container:
    """The write side, the read models and the bridge between them and async code."""

    settings: Settings
    database_url: str
    nats_url: str
    sessions: SessionService
    views: dict[str, View]
    checkpoints: PostgresTrackingRecorder
    bridge: SyncBridge
    accounts: AccountService

    @property
    def recorder(self) -> PostgresApplicationRecorder:
        recorder = self.sessions.recorder
        assert isinstance(recorder, PostgresApplicationRecorder)
        return recorder

    @property
    def accounts_recorder(self) -> PostgresApplicationRecorder:
        recorder = self.accounts.recorder
        assert isinstance(recorder, PostgresApplicationRecorder)
        return recorder

    def log_of(self, view: str) -> Application[UUID]:
        """The application whose event log feeds the read model named `view`."""
        return self.accounts if view == AccountsView.name else self.sessions

    def close(self) -> None:
        self.bridge.close()
        self.sessions.close()
        self.accounts.close()


@dataclass
class Services:
    """What runs in the background: the relay and the projection runners."""

    container: Container
    relay_enabled: bool = True
    projections_enabled: bool = True
    relay_batch_size: int = 256
    stream_factory: Callable[[JetStreamContext, str], EventStream] = EventStream
    relay: Relay | None = None
    accounts_relay: Relay | None = None
    runners: dict[str, ProjectionRunner] = field(default_factory=dict)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    _nats: NATS | None = None

    async def start(self, *, wait_for_nats: bool = True) -> None:
        """Start the relay and the runners once NATS answers (in the background unless
        `wait_for_nats`): the API and commands never wait for NATS."""
        connected = asyncio.Event()
        self._spawn(self._start_with_nats(connected), "nats connection")
        if wait_for_nats:
            await connected.wait()

    @property
    def nats(self) -> NATS | None:
        return self._nats

    async def _start_with_nats(self, connected: asyncio.Event) -> None:
        c = self.container
        nc = await connect_nats(c.nats_url, name="tokendance")
        self._nats = nc
        # One stream per application log (each relay's checkpoint is named after it).
        streams = {
            c.sessions.name: self.stream_factory(nc.jetstream(), c.settings.nats_stream),
            c.accounts.name: self.stream_factory(nc.jetstream(), c.settings.nats_accounts_stream),
        }
        if self.relay_enabled:
            self.relay = self._start_relay(c.recorder, streams[c.sessions.name])
            self.accounts_relay = self._start_relay(c.accounts_recorder, streams[c.accounts.name])
        if self.projections_enabled:
            for stream in streams.values():
                await stream.ensure()
            for name, view in c.views.items():
                app = c.log_of(name)
                feed = JetStreamFeed(streams[app.name], f"projection-{name}")
                runner = ProjectionRunner(view, mapper=app.mapper, feed=feed, bridge=c.bridge)
                self.runners[name] = runner
                self._spawn(runner.run(), f"projection {name}")
        connected.set()

    def _start_relay(self, recorder: PostgresApplicationRecorder, stream: EventStream) -> Relay:
        c = self.container
        relay = Relay(
            database_url=c.database_url,
            recorder=recorder,
            checkpoints=c.checkpoints,
            bridge=c.bridge,
            stream=stream,
            channel=recorder.channel_name,
            batch_size=self.relay_batch_size,
        )
        self._spawn(relay.run(), f"relay {stream.name}")
        return relay

    def _spawn(self, coro: Coroutine[object, object, None], name: str) -> None:
        self._tasks.append(asyncio.create_task(coro, name=name))

    async def stop(self) -> None:
        # Cancel until done: on Python 3.11 a cancel that lands as nats-py's wait_for
        # times out can be swallowed, and the loop it hits just goes round again.
        for _ in range(5):
            pending = [t for t in self._tasks if not t.done()]
            if not pending:
                break
            for task in pending:
                task.cancel()
            await asyncio.wait(pending, timeout=2.0)
        for task in self._tasks:
            if task.done() and not task.cancelled():
                with contextlib.suppress(ProjectionError):
                    task.result()
        self._tasks.clear()
        if self._nats is not None:
            await self._nats.close()


@dataclass
class Engine:
    """The agent loop and the tasks that drive it, on one event store."""

    runner: AgentRunner
    scheduler: RunScheduler
    blobs: BlobStore
    manual: ManualTools
    sessions: SessionService
    bridge: SyncBridge


@dataclass
class System:
    """Everything one process runs, wired once by `bootstrap`."""

    container: Container
    services: Services
    engine: Engine

    @property
    def settings(self) -> Settings:
        return self.container.settings

    async def stop(self) -> None:
        """End the run tasks (their runs stay active in the log) and the background services."""
        await self.engine.scheduler.close()
        await self.services.stop()

    def close(self) -> None:
        """Close the event store's connections and the thread pool."""
        self.container.close()


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
) -> System:
    """The whole system on the servers at `database_url` and `nats_url` (tables created).

    `tools` replaces the built-in tools (pass `[*build_tools(settings), extra]` to add
    one); `deltas` defaults to core NATS; `clock` is the accounts' (token expiry).
    The background services are built, not started: `await system.services.start()`.
    """
    container = _open_store(settings, database_url, nats_url, clock or time.time)
    services = Services(
        container,
        relay_enabled=relay,
        projections_enabled=projections,
        relay_batch_size=relay_batch_size,
        stream_factory=stream_factory or EventStream,
    )
    live = deltas or NatsDeltaSink(lambda: services.nats, settings.nats_stream)
    engine = bootstrap_engine(
        settings, sessions=container.sessions, bridge=container.bridge, llm=llm,
        tools=tools, blobs=blobs, deltas=live, counter=counter, engine_settings=engine_settings,
    )  # fmt: skip
    return System(container, services, engine)


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
) -> Engine:
    """The engine alone, on `sessions` (default: a new in-memory event store).

    Deltas default to nowhere; a bridge built here is the caller's to close
    (`engine.bridge.close()`).
    """
    sessions = sessions or in_memory_sessions()
    bridge = bridge or SyncBridge(4)
    blobs = blobs if blobs is not None else FilesystemBlobStore(settings.data_dir / "blobs")
    runner = AgentRunner(
        sessions=sessions,
        bridge=bridge,
        llm=llm if llm is not None else build_llm(settings),
        tools=ToolRegistry(build_tools(settings) if tools is None else tools),
        blobs=blobs,
        counter=counter if counter is not None else TiktokenCounter(),
        deltas=deltas if deltas is not None else NullDeltaSink(),
        settings=engine_settings or build_engine_settings(settings),
    )
    manual = ManualTools(runner.tool_calls, sessions, bridge)
    scheduler = RunScheduler(runner, sessions, bridge, manual)
    return Engine(runner, scheduler, blobs, manual, sessions, bridge)


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
        ).runner

    return build


def in_memory_sessions() -> SessionService:
    """The session service on a new, empty in-memory event store."""
    return SessionService(env=IN_MEMORY)


def build_llm(settings: Settings) -> LLM:
    """The model the settings name: scripted, Anthropic (key found), or none."""
    if settings.llm:
        return load_llm_spec(settings.llm, counter=TiktokenCounter())
    try:
        return AnthropicLLM.from_env(model=settings.model, max_tokens=settings.max_tokens)
    except LLMNotConfigured:
        return UnconfiguredLLM()


def build_tools(settings: Settings) -> list[AnyTool]:
    """The built-in tools, their ports injected (a tool that needs a client gets it here)."""
    return [UpdatePlan(), RecordFinding(), NoteProgress()]


def build_engine_settings(settings: Settings) -> EngineSettings:
    return EngineSettings(
        model=settings.model,
        max_tokens=settings.max_tokens,
        context_window=settings.context_window,
        max_iterations=settings.max_iterations,
    )


def _open_store(settings: Settings, database_url: str, nats_url: str, clock: Clock) -> Container:
    """Open the event store and the read models (creating their tables)."""
    env = eventstore_env(
        database_url, pool_size=settings.db_pool_size, max_overflow=settings.db_max_overflow
    )
    sessions = SessionService(env=env)
    factory = sessions.factory
    assert isinstance(factory, PostgresFactory)
    views: dict[str, View] = {
        v.name: v
        for v in (
            SessionsView(factory.datastore),
            WorkingMemoryView(factory.datastore),
            ConfirmationsView(factory.datastore),
            AccountsView(factory.datastore),
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
    return Container(
        settings, database_url, nats_url, sessions, views, checkpoints, bridge, accounts
    )


async def recover_runs(container: Container, engine: Engine) -> int:
    """Resume the runs a previous process left active; how many.

    Read from the event store itself, not a read model that may be behind it, so no
    run that ended or started just before the restart is missed or resumed twice.
    """
    active = await container.bridge(active_runs, container.recorder, container.sessions.mapper)
    engine.scheduler.recover(active)
    return len(active)
