"""What runs in the background (the relays, the projection runners, the keepers), as
`adapters.bootstrap.background` built it: started and stopped here."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from dataclasses import dataclass, field

from nats.aio.client import Client as NATS

from adapters.nats.link import NatsLink
from adapters.nats.relay import Relay
from adapters.nats.stream import EventStream
from adapters.postgres.advisory_locks import AdvisoryLocks
from adapters.postgres.leadership import Job
from application.auto_memory import MemoryKeeper
from projections.runner import ViewProgress
from projections.view import ProjectionError


@dataclass(frozen=True)
class Duty:
    """One job that runs until the process stops; those that `need_nats` start once it
    answers (and the streams are made), the others at once."""

    name: str
    run: Job
    needs_nats: bool = False


@dataclass
class Services:
    """The background duties of one process, and what the probes read of them."""

    link: NatsLink
    duties: list[Duty] = field(default_factory=list)
    streams: list[EventStream] = field(default_factory=list)  # made before the consumers
    stale_consumers: list[tuple[EventStream, list[str]]] = field(default_factory=list)
    relay: Relay | None = None
    accounts_relay: Relay | None = None
    memory_keeper: MemoryKeeper | None = None  # runs here when projections do
    runners: dict[str, ViewProgress] = field(default_factory=dict)  # by view name
    active_views: set[str] = field(default_factory=set)  # standby: those consumed here now
    locks: AdvisoryLocks | None = None  # the standby's leadership locks
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def start(self, *, wait_for_nats: bool = True) -> None:
        """Start the duties, those needing NATS once it answers (in the background unless
        `wait_for_nats`): the API and commands never wait for NATS."""
        connected = asyncio.Event()
        self._spawn(self._start_with_nats(connected), "nats connection")
        for duty in self.duties:
            if not duty.needs_nats:
                self._spawn(duty.run(), duty.name)
        if wait_for_nats:
            await connected.wait()

    @property
    def nats(self) -> NATS | None:
        return self.link()

    async def _start_with_nats(self, connected: asyncio.Event) -> None:
        await self.link.connect()
        for stream in self.streams:
            await stream.ensure()
        for stream, durables in self.stale_consumers:
            await stream.forget_consumers(durables)
        for duty in self.duties:
            if duty.needs_nats:
                self._spawn(duty.run(), duty.name)
        connected.set()

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
        if self.locks is not None:
            await self.locks.close()
        await self.link.close()
