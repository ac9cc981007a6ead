"""SSE responses over a session's feed: the chat run, and the resumable session stream.

Every message is a payload of the SSE contract (`schemas.sse`), encoded by one
encoder; its `event:` is the payload's tag and its `id` the stored event's version.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable, Sequence
from uuid import UUID

from litestar.response import ServerSentEvent, ServerSentEventMessage

from adapters.http.streams.sse import live_payload, payloads
from adapters.nats.session_feed import Idle, Live, SessionFeed, Stored
from domain.events import SessionEvent
from schemas import sse

RETRY_MS = 3000
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


class EventStream(ServerSentEvent):
    """litestar's SSE response, minus its thread hop per response.

    `ServerSentEvent` first sends the fields given to the response itself (an event type,
    id or retry for all of it, which these responses never set), reading them from a plain
    iterator through `sync_to_thread`: a trip to a worker thread per response even when
    there are none, about 0.3 ms of CPU a chat message. Here the stream is the messages
    alone, each encoded by litestar's own `ServerSentEventMessage.encode`, so the bytes
    sent are the same.
    """

    def __init__(self, messages: AsyncIterator[ServerSentEventMessage]) -> None:
        super().__init__(messages, headers=HEADERS)
        self.iterator = _encoded(messages)


async def _encoded(messages: AsyncIterator[ServerSentEventMessage]) -> AsyncIterator[bytes]:
    async for m in messages:
        yield m.encode()


def sse_response(messages: AsyncIterator[ServerSentEventMessage]) -> ServerSentEvent:
    return EventStream(messages)


def message(payload: sse.SsePayload) -> ServerSentEventMessage:
    return ServerSentEventMessage(
        data=sse.encode(payload).decode(), event=sse.event_type(payload), id=sse.sse_id(payload)
    )


async def run_messages(
    feed: SessionFeed,
    session_id: UUID,
    after: int,
    run_id: UUID,
    known: Sequence[SessionEvent] = (),
) -> AsyncIterator[ServerSentEventMessage]:
    """One run as SSE: until it ends (`done` / `error`), across approvals. `known`: the
    events right after `after` that the command which started the run wrote."""
    ends = functools.partial(_ends_run, run_id=run_id)
    async for m in _messages(feed, session_id, after, ends, known):
        yield m


async def session_messages(
    feed: SessionFeed, session_id: UUID, after: int
) -> AsyncIterator[ServerSentEventMessage]:
    """Every stored event after `after`, then live, until the client goes away."""
    async for m in _messages(feed, session_id, after, lambda _: False):
        yield m


async def _messages(
    feed: SessionFeed,
    session_id: UUID,
    after: int,
    last: Callable[[sse.SsePayload], bool],
    known: Sequence[SessionEvent] = (),
) -> AsyncIterator[ServerSentEventMessage]:
    yield ServerSentEventMessage(data=None, retry=RETRY_MS)
    async for item in feed.read(session_id, after, known=known):
        match item:
            case Live(delta=delta):
                yield message(live_payload(delta))
            case Idle():
                yield ServerSentEventMessage(data=None, comment="keep-alive")
            case Stored(event=event):
                ends = False
                for payload in payloads(event):
                    yield message(payload)
                    ends = ends or last(payload)
                if ends:
                    return


def _ends_run(payload: sse.SsePayload, run_id: UUID) -> bool:
    """The run's own end. A `confirm_required` does not end it: the chat stream waits for
    the answer (`adapters/http/streams/approval_wait.py` bounds that wait)."""
    match payload:
        case sse.Done(run_id=ended) | sse.Error(run_id=ended):
            return ended == run_id
        case _:
            return False
