"""The composition root: the one place that picks concrete adapters."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
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
from adapters.llm.anthropic import AnthropicLLM
from adapters.llm.scripted import load_llm_spec
from adapters.llm.tokens import TiktokenCounter
from adapters.llm.unconfigured import UnconfiguredLLM
from adapters.nats.connection import connect_nats
from adapters.nats.feed import JetStreamFeed
from adapters.nats.relay import Relay
from adapters.nats.stream import EventStream
from adapters.postgres.eventstore import eventstore_env
from adapters.settings import Settings
from application.accounts import AccountService
from application.bridge import SyncBridge
from application.manual_tools import ManualTools
from application.ports import LLM, BlobStore, DeltaSink, LLMNotConfigured
from application.runner import AgentRunner, EngineSettings
from application.runs import RunScheduler
from application.sessions import SessionService
from application.tools.registry import ToolRegistry
from projections.accounts import AccountsView
from projections.confirmations import ConfirmationsView
from projections.runner import ProjectionRunner
from projections.sessions import SessionsView
from projections.view import TRACKING_TABLE, ProjectionError, View
from projections.working_memory import WorkingMemoryView

log = logging.getLogger(__name__)


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


def build(settings: Settings, *, database_url: str, nats_url: str) -> Container:
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
    bridge = SyncBridge(settings.thread_pool_size)
    accounts = AccountService(
        env=eventstore_env(database_url, pool_size=2, max_overflow=settings.db_max_overflow),
        jwt_secret=settings.signing_secret(),
        access_ttl=settings.access_ttl,
    )
    return Container(
        settings, database_url, nats_url, sessions, views, checkpoints, bridge, accounts
    )


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


def build_llm(settings: Settings) -> LLM:
    """The model the settings name: scripted, Anthropic (key found), or none."""
    if settings.llm:
        return load_llm_spec(settings.llm, counter=TiktokenCounter())
    try:
        return AnthropicLLM.from_env(model=settings.model, max_tokens=settings.max_tokens)
    except LLMNotConfigured:
        return UnconfiguredLLM()


@dataclass
class Engine:
    """The agent loop and the tasks that drive it."""

    runner: AgentRunner
    scheduler: RunScheduler
    blobs: BlobStore
    manual: ManualTools


def build_engine(
    container: Container,
    *,
    deltas: DeltaSink,
    llm: LLM | None = None,
    tools: ToolRegistry | None = None,
    blobs: BlobStore | None = None,
) -> Engine:
    s = container.settings
    blobs = blobs or FilesystemBlobStore(s.data_dir / "blobs")
    runner = AgentRunner(
        sessions=container.sessions,
        bridge=container.bridge,
        llm=llm or build_llm(s),
        tools=tools or ToolRegistry.discover(),
        blobs=blobs,
        counter=TiktokenCounter(),
        deltas=deltas,
        settings=EngineSettings(
            model=s.model,
            max_tokens=s.max_tokens,
            context_window=s.context_window,
            max_iterations=s.max_iterations,
        ),
    )
    manual = ManualTools(runner.tool_calls, container.sessions, container.bridge)
    scheduler = RunScheduler(runner, container.sessions, container.bridge, manual)
    return Engine(runner, scheduler, blobs, manual)


async def recover_runs(container: Container, engine: Engine, *, timeout: float = 30.0) -> int:
    """Resume the runs a previous process left active; how many.

    Waits (bounded) for the sessions view to reach the end of the log, so no run
    that ended or started just before the restart is missed or resumed twice.
    """
    view = container.views["sessions"]
    assert isinstance(view, SessionsView)
    head = await container.bridge(container.recorder.max_notification_id) or 0
    if not await container.bridge(view.wait_for, head, timeout):
        log.warning("sessions view is behind the log; recovering the runs it knows")
    active = await container.bridge(view.active_runs)
    engine.scheduler.recover(active)
    return len(active)
