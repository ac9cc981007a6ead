"""The runs work queue: a JetStream work-queue stream of run requests, and a worker's stop line.

A run to drive is a `RunRequest` on `<stream>.request.<session>`; its `Nats-Msg-Id` is
the run id and the session version it was asked at, so a request published twice is
stored once. All workers share one durable pull consumer (`workers`): each message
goes to one worker at a time, and comes back to another when its worker stops
heartbeating (`ack_wait`). A stop reaches the worker that holds a run on its own
subject (`<stream>.stop.<worker token>`): the API asks, the worker cancels its task
and answers.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from uuid import UUID, uuid4

import msgspec
from nats.aio.client import Client as NATS
from nats.errors import NoRespondersError
from nats.errors import TimeoutError as NatsTimeout
from nats.js import JetStreamContext
from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    Header,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)
from nats.js.errors import NotFoundError

from adapters.nats.stream import StreamUnavailable
from adapters.observability.telemetry_runs import trace_headers
from schemas.runs import RunRequest

DURABLE = "workers"
STOPPED = b"stopped"
NOT_HERE = b"not-here"
STOP_WAIT = 3.0  # seconds the API waits for the holder to end its task


def worker_token(worker: str) -> str:
    """A subject token for a worker's name (`host:pid` may hold dots)."""
    return hashlib.sha256(worker.encode()).hexdigest()[:20]


class RunQueue:
    """The work-queue stream of run requests, `name` (the API's `RunDispatch`)."""

    def __init__(self, connection: Callable[[], NATS | None], name: str) -> None:
        self._connection = connection
        self.name = name
        self.prefix = name.lower()
        self._ensured = False

    @property
    def requests(self) -> str:
        return f"{self.prefix}.request.>"

    def stop_subject(self, worker: str) -> str:
        return f"{self.prefix}.stop.{worker_token(worker)}"

    def connection(self) -> NATS:
        """The connected NATS client (`StreamUnavailable` while there is none)."""
        nc = self._connection()
        if nc is None or not nc.is_connected:
            raise StreamUnavailable("NATS is not connected")
        return nc

    async def ensure(self, js: JetStreamContext | None = None) -> None:
        """Create the stream if it is missing (an existing one is used as it is)."""
        js = js or self.connection().jetstream()
        try:
            await js.stream_info(self.name)
        except NotFoundError:
            await js.add_stream(
                StreamConfig(
                    name=self.name,
                    subjects=[self.requests],
                    retention=RetentionPolicy.WORK_QUEUE,
                    storage=StorageType.FILE,
                    duplicate_window=120.0,
                )
            )
        self._ensured = True

    async def dispatch(
        self,
        session_id: UUID,
        run_id: UUID,
        at_version: int,
        *,
        recovering: bool = False,
        again: bool = False,
    ) -> None:
        """Ask a worker to drive the run. `again`: the sweep hands out a run no worker
        holds, whose first request may have been taken and acked away without the run
        started: a message of its own, not a duplicate of that first one to JetStream
        (which would drop it for its whole duplicate window)."""
        request = RunRequest(session_id, run_id, at_version, recovering)
        await self.publish(request, again=again)

    async def publish(self, request: RunRequest, *, again: bool = False) -> None:
        js = self.connection().jetstream()
        if not self._ensured:
            await self.ensure(js)
        msg_id = f"{request.message_id}:again:{uuid4().hex}" if again else request.message_id
        await js.publish(
            f"{self.prefix}.request.{request.session_id}",
            msgspec.json.encode(request),
            # The caller's trace goes on in the worker that drives the run.
            headers={Header.MSG_ID.value: msg_id, **trace_headers()},
        )

    async def consumer(self, ack_wait: float) -> JetStreamContext.PullSubscription:
        """The workers' shared durable pull consumer (made with the stream if missing).

        Redelivery is unlimited here: the worker counts deliveries itself and fails a
        run after its limit, so a run whose worker dies every time still ends.
        """
        js = self.connection().jetstream()
        await self.ensure(js)
        return await js.pull_subscribe(
            self.requests,
            durable=DURABLE,
            stream=self.name,
            config=ConsumerConfig(ack_policy=AckPolicy.EXPLICIT, ack_wait=ack_wait, max_deliver=-1),
        )

    async def stop(self, session_id: UUID, worker: str) -> bool:
        """Ask `worker` to stop driving the session's run; whether it did."""
        try:
            reply = await self.connection().request(
                self.stop_subject(worker), str(session_id).encode(), timeout=STOP_WAIT
            )
        except (TimeoutError, NoRespondersError, NatsTimeout):
            return False  # gone, or too slow: the stop is recorded anyway
        return reply.data == STOPPED
