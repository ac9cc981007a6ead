"""What runs in the background: the relays (Postgres -> NATS), the projection runners,
the memory keeper, and the upkeep of the memories' vector graphs."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from uuid import UUID

from eventsourcing.application import Application
from eventsourcing.postgres import PostgresApplicationRecorder
from nats.aio.client import Client as NATS
from nats.errors import Error as NatsError
from nats.js import JetStreamContext

from adapters.alert_webhook import AlertWebhook
from adapters.container import Container
from adapters.nats.connection import connect_nats
from adapters.nats.feed import JetStreamFeed
from adapters.nats.relay import Relay
from adapters.nats.stream import EventStream
from adapters.postgres.advisory_locks import AdvisoryLocks
from adapters.postgres.leadership import Job, lead
from application.auto_memory import AutoMemory, MemoryKeeper
from projections.memories import MemoriesView
from projections.runner import ProjectionRunner, ViewProgress
from projections.vector_graphs import GraphKeeper, keep_quietly
from projections.view import ProjectionError, View


@dataclass
class Services:
    """What runs in the background: the relay and the projection runners."""

    container: Container
    relay_enabled: bool = True
    projections_enabled: bool = True
    relay_batch_size: int = 256
    relay_poll_interval: float = 1.0  # seconds a caught-up relay waits for a NOTIFY
    stream_factory: Callable[[JetStreamContext, str], EventStream] = EventStream
    # Other processes may run the same projections: each view's runner then consumes
    # only while this process holds the view's lock, and stands by otherwise.
    standby: bool = False
    graph_interval: float = 60.0  # seconds between passes of the vector graphs' keeper
    memory_interval: float = 2.0  # seconds between passes of the memory keeper
    relay: Relay | None = None
    memory_keeper: MemoryKeeper | None = None  # runs here when projections do
    accounts_relay: Relay | None = None
    runners: dict[str, ViewProgress] = field(default_factory=dict)  # by view name
    active_views: set[str] = field(default_factory=set)  # standby: those consumed here now
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)
    _nats: NATS | None = None
    _locks: AdvisoryLocks | None = None

    async def start(self, *, wait_for_nats: bool = True) -> None:
        """Start the relay and the runners once NATS answers (in the background unless
        `wait_for_nats`): the API and commands never wait for NATS."""
        connected = asyncio.Event()
        self._spawn(self._start_with_nats(connected), "nats connection")
        self._start_alert_webhook()
        if self.projections_enabled:
            self._start_graph_keeper()
            self._start_memory_keeper()
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
            for app, views in self._views_by_log():
                log_name = app.name
                # Runners of one view each (before one runner per log) left these behind.
                await streams[log_name].forget_consumers([f"projection-{v.name}" for v in views])
                # One consumer for all the views of a log: each event decoded once,
                # each batch one transaction for every view (`ProjectionRunner`).
                feed = JetStreamFeed(streams[log_name], f"projections-{log_name}")
                runner = ProjectionRunner(views, mapper=app.mapper, feed=feed, bridge=c.bridge)
                self.runners.update(runner.progress)
                what = f"projections of {log_name}"
                if self.standby:
                    locks = self._locks = self._locks or AdvisoryLocks(c.database_url)
                    job = self._while_active(runner)
                    self._spawn(lead(locks, f"projections:{log_name}", job), what)
                else:
                    self._spawn(runner.run(), what)
        connected.set()

    def _views_by_log(self) -> list[tuple[Application[UUID], list[View]]]:
        c = self.container
        groups: dict[str, tuple[Application[UUID], list[View]]] = {}
        for name, view in c.views.items():
            app = c.log_of(name)
            groups.setdefault(app.name, (app, []))[1].append(view)
        return list(groups.values())

    def _while_active(self, runner: ProjectionRunner) -> Job:
        async def job() -> None:
            self.active_views.update(runner.progress)
            try:
                await runner.run()
            finally:
                self.active_views.difference_update(runner.progress)

        return job

    def _start_alert_webhook(self) -> None:
        """Deliver budget alerts to the webhook, when one is configured (no NATS needed)."""
        s = self.container.settings
        if s.alert_webhook is None or s.alert_webhook_secret is None:
            return
        webhook = AlertWebhook(
            self.container.database_url, s.alert_webhook, s.alert_webhook_secret.encode()
        )
        self._spawn(webhook.run(), "alert webhook")

    def _start_graph_keeper(self) -> None:
        """Give each namespace that grew large a vector graph of its own (and drop those no
        longer wanted), a pass now and then; processes take turns by the keeper's lock."""
        keeper = GraphKeeper(self.container.views.memories.datastore, [MemoriesView.VECTORS])

        async def keep() -> None:
            while True:
                await asyncio.sleep(self.graph_interval)
                try:
                    await asyncio.to_thread(keep_quietly, keeper)
                except asyncio.CancelledError:
                    keeper.cancel()  # a build runs for minutes: stop it, the next pass redoes it
                    raise

        self._spawn(keep(), "vector graphs")

    def _start_memory_keeper(self) -> None:
        """Keep what sessions taught that their runs did not get to keep (no NATS needed:
        it reads the log); one process at a time, by the keeper's lock, when several may."""
        c = self.container
        keeper = self.memory_keeper = MemoryKeeper(
            c.sessions, c.checkpoints, AutoMemory(c.memories), c.bridge,
            interval=self.memory_interval,
        )  # fmt: skip
        if self.standby:
            self._locks = self._locks or AdvisoryLocks(c.database_url)
            self._spawn(lead(self._locks, MemoryKeeper.NAME, keeper.run), "memory keeper")
        else:
            self._spawn(keeper.run(), "memory keeper")

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
            poll_interval=self.relay_poll_interval,
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
        if self._locks is not None:
            await self._locks.close()
        if self._nats is not None:
            # With NATS already gone, closing the client fails: nothing is left to close.
            with contextlib.suppress(NatsError, OSError):
                await self._nats.close()
