"""The worker role: drives runs taken from the runs work queue, any number of workers at once.

For each run request a worker:
1. terminates a malformed message (logged with its id), and fails a run delivered more
   than `max_deliveries` times (`RUN_DELIVERY_EXHAUSTED`) instead of looping;
2. takes the session's advisory lock (`RunLocks`): if a live worker holds it, this
   request is a duplicate and is acked away;
3. reads the log: a run no longer active, or waiting for a human, needs nothing;
4. claims the run by appending `RunStarted` with its name when the run was started
   before (resumed after an approval, or taken over: optimistic concurrency, one claim
   wins), and holds it (`SessionService.hold`), so a stalled former holder can write
   nothing more;
5. drives it, heartbeating with in-progress acks, and acks when the run ends or
   suspends; naks with a delay on a retryable failure (the database away, a lost
   race), and fails the run with a clear error on the last delivery.
A run redelivered after its worker died resumes from the log: a tool call without a
result is recorded `interrupted`, never run twice. A stop for a run it holds arrives on
the worker's own subject: the task is cancelled, and the API records the stop.
Every `sweep` seconds a worker hands out again the active runs that no live worker
holds (requested while NATS was away, left by a worker that died, or whose request was
taken and acked away with nothing started), as messages of their own: not duplicates
of the first request, which JetStream would drop for its duplicate window.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from uuid import UUID

import msgspec
import psycopg
from eventsourcing.persistence import InterfaceError, Mapper, OperationalError
from eventsourcing.postgres import PostgresApplicationRecorder
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.errors import Error as NatsError
from nats.errors import TimeoutError as NatsTimeout

from adapters.nats.connection import Backoff
from adapters.nats.run_queue import NOT_HERE, STOPPED, RunQueue
from adapters.nats.stream import StreamUnavailable
from adapters.observability.telemetry_runs import continued
from adapters.postgres.active_runs import active_runs
from adapters.postgres.advisory_locks import SessionRunLocks
from adapters.system import Engine
from application import log_context
from application.runner import RunEnd
from application.runs import STOP_GRACE, internal_failure
from application.sessions import SessionService
from domain.errors import ClaimLost, Conflict, InvalidCommand
from domain.events import SessionEvent
from domain.session import AgentSession as S
from schemas.runs import RunRequest

log = logging.getLogger(__name__)

RETRYABLE = (OperationalError, InterfaceError, psycopg.OperationalError, Conflict)
NAK_DELAY_CEILING = 30.0


@dataclass
class WorkerSettings:
    concurrency: int = 16
    ack_wait: float = 30.0
    max_deliveries: int = 5
    sweep: float = 15.0
    retry_delay: float = 1.0  # seconds before a failed try is retried, doubling each time


@dataclass
class Worker:
    """Takes runs from the queue and drives them with `engine` (see the module doc)."""

    engine: Engine
    queue: RunQueue
    locks: SessionRunLocks
    recorder: PostgresApplicationRecorder
    mapper: Mapper[UUID]
    settings: WorkerSettings = field(default_factory=WorkerSettings)
    _tasks: dict[UUID, asyncio.Task[RunEnd]] = field(default_factory=dict)
    _stopped: set[UUID] = field(default_factory=set)
    _driving: set[UUID] = field(default_factory=set)  # sessions whose run this process has
    _handling: set[asyncio.Task[None]] = field(default_factory=set)

    @property
    def name(self) -> str:
        return self.engine.runner.worker

    async def run(self) -> None:
        """Take and drive runs until cancelled; then hand back the ones in hand."""
        sweep = asyncio.create_task(self._sweep(), name="run sweep")
        try:
            await self._take()
        finally:
            sweep.cancel()
            for task in list(self._handling):
                task.cancel()
            await asyncio.gather(*self._handling, sweep, return_exceptions=True)
            await self.locks.close()

    async def _take(self) -> None:
        backoff = Backoff(first=0.1, ceiling=5.0)
        while True:
            try:
                sub = await self.queue.consumer(self.settings.ack_wait)
                control = await self._listen_for_stops()
                break
            except (NatsError, OSError, TimeoutError, StreamUnavailable) as e:
                log.warning("worker cannot reach the runs queue yet (%s); retrying", e)
                await backoff.wait()
        try:
            while True:
                free = self.settings.concurrency - len(self._handling)
                if free <= 0:
                    await asyncio.wait(self._handling, return_when=asyncio.FIRST_COMPLETED)
                    continue
                try:
                    msgs = await sub.fetch(free, timeout=1.0)
                except (NatsTimeout, TimeoutError):
                    continue
                except NatsError as e:
                    log.warning("fetching runs failed (%s); retrying", e)
                    await backoff.wait()
                    continue
                for msg in msgs:
                    task = asyncio.create_task(self._settle(msg), name="run message")
                    self._handling.add(task)
                    task.add_done_callback(self._handling.discard)
        finally:
            with contextlib.suppress(NatsError):
                await control.unsubscribe()

    async def _settle(self, msg: Msg) -> None:
        try:
            await self._handle(msg)
        except NatsError as e:  # not acked: it comes back, and the log says what is left
            log.warning("could not settle run message %s (%s)", msg.metadata.sequence.stream, e)

    async def _handle(self, msg: Msg) -> None:
        try:
            request = msgspec.json.decode(msg.data, type=RunRequest)
        except msgspec.DecodeError as e:
            msg_id = (msg.headers or {}).get("Nats-Msg-Id", "?")
            seq = msg.metadata.sequence.stream
            log.error("terminating malformed run message %s (stream seq %s): %s", msg_id, seq, e)
            await msg.term()
            return
        delivered = msg.metadata.num_delivered
        if delivered > self.settings.max_deliveries:
            await self._give_up(request, f"it was handed to a worker {delivered - 1} times")
            await msg.ack()
            return
        sid = request.session_id
        if sid in self._driving:  # this worker drives it already (its locks are reentrant)
            await msg.ack()
            return
        self._driving.add(sid)
        try:
            try:
                locked = await self.locks.try_lock(sid)
            except psycopg.OperationalError as e:
                log.warning("run %s waits: no run lock (%s)", request.run_id, e)
                await msg.nak(delay=self._delay(delivered))
                return
            if not locked:
                await msg.ack()  # a live worker drives this session's run: a duplicate request
                return
            try:
                await self._drive(request, msg, delivered)
            finally:
                await self.locks.unlock(sid)
        finally:
            self._driving.discard(sid)

    async def _drive(self, request: RunRequest, msg: Msg, delivered: int) -> None:
        with log_context.bound(session_id=request.session_id, run_id=request.run_id):
            await self._drive_run(request, msg, delivered)

    async def _drive_run(self, request: RunRequest, msg: Msg, delivered: int) -> None:
        sid, run_id = request.session_id, request.run_id
        engine = self.engine
        heartbeat = asyncio.create_task(self._heartbeat(msg))
        try:
            session = await engine.bridge(engine.sessions.get_session, sid)
            if session.active_run != run_id or session.pending_confirmations:
                await msg.ack()  # ended, or waits for a human: its resume is a request of its own
                return
            if session.run_worker is not None:  # resumed, or taken over: say who drives it now
                await engine.bridge(engine.sessions.start_run, sid, run_id, self.name)
            recovering = request.recovering or delivered > 1
            with engine.sessions.hold(sid, run_id, self.name):
                if session.run_worker is None:  # as just read: the run's first write needs
                    engine.sessions.lend(session)  # no read of its own
                with continued(msg.headers):  # the trace of the request that asked for it
                    task = asyncio.create_task(
                        engine.runner.run(sid, run_id, recovering=recovering), name=f"run {run_id}"
                    )
                self._tasks[sid] = task
                await task
            await msg.ack()
        except asyncio.CancelledError:
            if sid in self._stopped:  # stopped by the user: the API records it
                await msg.ack()
                return
            await msg.nak()  # shutting down: another worker takes it at once
            raise
        except ClaimLost as e:  # stopped, ended or taken over meanwhile
            log.info("run %s: %s", run_id, e)
            await msg.ack()
        except RETRYABLE as e:
            if delivered >= self.settings.max_deliveries:
                await self._give_up(request, f"its last try failed: {type(e).__name__}: {e}")
                await msg.ack()
            else:
                log.warning("run %s failed (%s); handing it back", run_id, e)
                await msg.nak(delay=self._delay(delivered))
        except Exception as e:
            log.exception("run %s of session %s failed", run_id, sid)
            with contextlib.suppress(Exception):
                await engine.bridge(engine.sessions.fail_run, sid, run_id, *internal_failure(e))
            await msg.ack()
        finally:
            heartbeat.cancel()
            self._tasks.pop(sid, None)
            self._stopped.discard(sid)

    async def _heartbeat(self, msg: Msg) -> None:
        """Tell JetStream the run is still in hand, well within `ack_wait`."""
        while True:
            await asyncio.sleep(self.settings.ack_wait / 3)
            with contextlib.suppress(NatsError):
                await msg.in_progress()

    async def _give_up(self, request: RunRequest, why: str) -> None:
        reason = (
            f"the run never finished: {why}; the limit is "
            f"{self.settings.max_deliveries} (TOKENDANCE_RUN_MAX_DELIVERIES)"
        )
        log.error("run %s of session %s: %s", request.run_id, request.session_id, reason)
        engine = self.engine
        with contextlib.suppress(InvalidCommand, Conflict):
            await engine.bridge(
                engine.sessions.fail_run,
                request.session_id, request.run_id, reason, "RUN_DELIVERY_EXHAUSTED",
            )  # fmt: skip

    def _delay(self, delivered: int) -> float:
        return min(self.settings.retry_delay * 2.0 ** (delivered - 1), NAK_DELAY_CEILING)

    async def _listen_for_stops(self) -> Subscription:
        nc = self.queue.connection()

        async def on_stop(msg: Msg) -> None:
            try:
                sid = UUID(msg.data.decode())
            except ValueError:
                return
            task = self._tasks.get(sid)
            if task is None:
                await msg.respond(NOT_HERE)
                return
            self._stopped.add(sid)
            task.cancel()
            await asyncio.wait([task], timeout=STOP_GRACE)
            await msg.respond(STOPPED)

        return await nc.subscribe(self.queue.stop_subject(self.name), cb=on_stop)

    async def _sweep(self) -> None:
        """Hand out again the active runs no live worker holds (see the module doc)."""
        while True:
            try:
                await self._sweep_once()
            except (
                NatsError, OSError, TimeoutError, StreamUnavailable, OperationalError,
                psycopg.OperationalError,
            ) as e:  # fmt: skip
                log.warning("run sweep failed (%s); next time", e)
            await asyncio.sleep(self.settings.sweep)

    async def _sweep_once(self) -> int:
        engine = self.engine
        handed = 0
        for sid, run_id in await engine.bridge(active_runs, self.recorder, self.mapper):
            if sid in self._driving or await self.locks.held_elsewhere(sid):
                continue
            session = await engine.bridge(engine.sessions.get_session, sid)
            if session.active_run != run_id or session.pending_confirmations:
                continue
            last = await engine.bridge(_last_event, engine.sessions, sid, session.version)
            # Nothing since the request or the approval: no worker started on it yet.
            untouched = isinstance(last, S.RunRequested | S.ConfirmationGiven)
            await self.queue.dispatch(
                sid, run_id, session.version, recovering=not untouched, again=True
            )
            handed += 1
        return handed


def _last_event(sessions: SessionService, session_id: UUID, version: int) -> SessionEvent | None:
    return next(iter(sessions.session_events(session_id, after=version - 1)), None)
