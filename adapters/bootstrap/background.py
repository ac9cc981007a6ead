"""The background of one process, built before it starts: the relays (Postgres ->
NATS), the projection runners and their feeds, the memory keeper, the upkeep of the
memories' vector graphs and the alert webhook (`Services` starts and stops them)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from uuid import UUID

from eventsourcing.application import Application
from eventsourcing.postgres import PostgresApplicationRecorder
from nats.aio.client import Client as NATS

from adapters.alert_webhook import AlertWebhook
from adapters.container import Container
from adapters.nats.feed import JetStreamFeed
from adapters.nats.link import NatsLink
from adapters.nats.relay import Relay
from adapters.nats.stream import EventStream
from adapters.postgres.advisory_locks import AdvisoryLocks
from adapters.postgres.leadership import Job, lead
from adapters.services import Duty, Services
from application.auto_memory import AutoMemory, MemoryKeeper
from projections.memories import MemoriesView
from projections.runner import ProjectionRunner
from projections.vector_graphs import GraphKeeper, keep_quietly
from projections.view import View

StreamFactory = Callable[[Callable[[], NATS | None], str], EventStream]


@dataclass(frozen=True)
class Background:
    """What runs beside the requests and the runs, and how often."""

    relay: bool = True  # the relays, Postgres -> NATS
    projections: bool = True  # the read models, the memory keeper, the vector graphs
    relay_batch_size: int = 256
    relay_poll_interval: float = 1.0  # seconds a caught-up relay waits for a NOTIFY
    stream_factory: StreamFactory = EventStream
    # Other processes may run the same projections: each view's runner then consumes
    # only while this process holds the view's lock, and stands by otherwise.
    standby: bool = False
    graph_interval: float = 60.0  # seconds between passes of the vector graphs' keeper
    memory_interval: float = 2.0  # seconds between passes of the memory keeper


EVERY_DUTY = Background()  # `serve`: the whole product in one process
NO_BACKGROUND = Background(relay=False, projections=False)  # commands, API replicas, workers


def build_services(
    container: Container, link: NatsLink | None = None, background: Background = EVERY_DUTY
) -> Services:
    """The background duties of a process on `container`, talking to NATS by `link`."""
    c, b = container, background
    link = link or NatsLink(c.nats_url)
    services = Services(link)
    if b.standby:
        services.locks = AdvisoryLocks(c.database_url)
    # One stream per application log (each relay's checkpoint is named after it).
    streams = {
        c.sessions.name: b.stream_factory(link, c.settings.nats_stream),
        c.accounts.name: b.stream_factory(link, c.settings.nats_accounts_stream),
    }
    if b.relay:
        services.relay = _relay(services, c, c.recorder, streams[c.sessions.name], b)
        services.accounts_relay = _relay(
            services, c, c.accounts_recorder, streams[c.accounts.name], b
        )
    if b.projections:
        services.streams = list(streams.values())
        for app, views in _views_by_log(c):
            _projections(services, c, app, views, streams[app.name])
        _graph_keeper(services, c, b.graph_interval)
        _memory_keeper(services, c, b.memory_interval)
    _alert_webhook(services, c)
    return services


def _relay(
    services: Services,
    c: Container,
    recorder: PostgresApplicationRecorder,
    stream: EventStream,
    b: Background,
) -> Relay:
    relay = Relay(
        database_url=c.database_url,
        recorder=recorder,
        checkpoints=c.checkpoints,
        bridge=c.bridge,
        stream=stream,
        channel=recorder.channel_name,
        batch_size=b.relay_batch_size,
        poll_interval=b.relay_poll_interval,
    )
    services.duties.append(Duty(f"relay {stream.name}", relay.run, needs_nats=True))
    return relay


def _views_by_log(c: Container) -> list[tuple[Application[UUID], list[View]]]:
    groups: dict[str, tuple[Application[UUID], list[View]]] = {}
    for name, view in c.views.items():
        app = c.log_of(name)
        groups.setdefault(app.name, (app, []))[1].append(view)
    return list(groups.values())


def _projections(
    services: Services,
    c: Container,
    app: Application[UUID],
    views: list[View],
    stream: EventStream,
) -> None:
    """One consumer for all the views of a log: each event decoded once, each batch one
    transaction for every view (`ProjectionRunner`)."""
    log_name = app.name
    # Runners of one view each (before one runner per log) left these behind.
    services.stale_consumers.append((stream, [f"projection-{v.name}" for v in views]))
    feed = JetStreamFeed(stream, f"projections-{log_name}")
    runner = ProjectionRunner(views, mapper=app.mapper, feed=feed, bridge=c.bridge)
    services.runners.update(runner.progress)
    what = f"projections of {log_name}"
    if services.locks is None:
        services.duties.append(Duty(what, runner.run, needs_nats=True))
        return
    locks, active = services.locks, services.active_views

    async def while_active() -> None:
        active.update(runner.progress)
        try:
            await runner.run()
        finally:
            active.difference_update(runner.progress)

    leading = _leading(locks, f"projections:{log_name}", while_active)
    services.duties.append(Duty(what, leading, needs_nats=True))


def _leading(locks: AdvisoryLocks, name: str, job: Job) -> Job:
    """`job`, run while this process holds the lock `name` (standing by otherwise)."""
    return lambda: lead(locks, name, job)


def _graph_keeper(services: Services, c: Container, interval: float) -> None:
    """Give each namespace that grew large a vector graph of its own (and drop those no
    longer wanted), a pass now and then; processes take turns by the keeper's lock."""
    keeper = GraphKeeper(c.views.memories.datastore, [MemoriesView.VECTORS])

    async def keep() -> None:
        while True:
            await asyncio.sleep(interval)
            try:
                await asyncio.to_thread(keep_quietly, keeper)
            except asyncio.CancelledError:
                keeper.cancel()  # a build runs for minutes: stop it, the next pass redoes it
                raise

    services.duties.append(Duty("vector graphs", keep))


def _memory_keeper(services: Services, c: Container, interval: float) -> None:
    """Keep what sessions taught that their runs did not get to keep (no NATS needed:
    it reads the log); one process at a time, by the keeper's lock, when several may."""
    keeper = services.memory_keeper = MemoryKeeper(
        c.sessions, c.checkpoints, AutoMemory(c.memories), c.bridge, interval=interval
    )
    run = (
        keeper.run if services.locks is None else _leading(services.locks, keeper.NAME, keeper.run)
    )
    services.duties.append(Duty("memory keeper", run))


def _alert_webhook(services: Services, c: Container) -> None:
    """Deliver budget alerts to the webhook, when one is configured (no NATS needed)."""
    s = c.settings
    if s.alert_webhook is None or s.alert_webhook_secret is None:
        return
    webhook = AlertWebhook(c.database_url, s.alert_webhook, s.alert_webhook_secret.encode())
    services.duties.append(Duty("alert webhook", webhook.run))
