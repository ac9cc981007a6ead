"""SSE responses over a session's feed: the chat run, and the resumable session stream."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from uuid import UUID

from litestar.response import ServerSentEvent, ServerSentEventMessage

from adapters.http.api import Api
from adapters.http.sse import TERMINAL, live_message, stored_messages
from adapters.nats.session_feed import Idle, Live, Stored

RETRY_MS = 3000
HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def sse(messages: AsyncIterator[ServerSentEventMessage]) -> ServerSentEvent:
    return ServerSentEvent(messages, headers=HEADERS)


async def run_messages(
    api: Api, session_id: UUID, after: int, run_id: UUID
) -> AsyncIterator[ServerSentEventMessage]:
    """One run as SSE: until it ends (`done` / `error`) or waits for a human."""
    async for message in _messages(api, session_id, after, lambda s: _ends_run(s, run_id)):
        yield message


async def session_messages(
    api: Api, session_id: UUID, after: int
) -> AsyncIterator[ServerSentEventMessage]:
    """Every stored event after `after`, then live, until the client goes away."""
    async for message in _messages(api, session_id, after, lambda _: False):
        yield message


async def _messages(
    api: Api, session_id: UUID, after: int, last: Callable[[Stored], bool]
) -> AsyncIterator[ServerSentEventMessage]:
    yield ServerSentEventMessage(data=None, retry=RETRY_MS)
    async for item in api.feed.read(session_id, after):
        if isinstance(item, Live):
            yield live_message(item.delta)
        elif isinstance(item, Idle):
            yield ServerSentEventMessage(data=None, comment="keep-alive")
        else:
            for message in stored_messages(item.event):
                yield message
            if last(item):
                return


def _ends_run(item: Stored, run_id: UUID) -> bool:
    kind = type(item.event).__name__
    if kind == "ConfirmationRequested":
        return True  # the run waits; the client confirms and follows the session stream
    return kind in TERMINAL and item.event.__dict__.get("run_id") == run_id
