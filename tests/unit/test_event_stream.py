"""The SSE response the API sends (`EventStream`) puts the same bytes and headers on the
wire as litestar's `ServerSentEvent` over the same messages."""

from __future__ import annotations

from collections.abc import AsyncIterator

from litestar import Litestar, get
from litestar.response import ServerSentEvent, ServerSentEventMessage
from litestar.testing import TestClient

from adapters.http.streams.streaming import HEADERS, sse_response


async def messages() -> AsyncIterator[ServerSentEventMessage]:
    yield ServerSentEventMessage(data=None, retry=3000)
    yield ServerSentEventMessage(data='{"a": 1}', event="message", id=7)
    yield ServerSentEventMessage(data="two\nlines", event="tool_result", id=8)
    yield ServerSentEventMessage(data=None, comment="keep-alive")
    yield ServerSentEventMessage(data="{}", event="done", id=9)


@get("/ours")
async def ours() -> ServerSentEvent:
    return sse_response(messages())


@get("/litestars")
async def litestars() -> ServerSentEvent:
    return ServerSentEvent(messages(), headers=HEADERS)


def test_the_stream_is_litestars_byte_for_byte() -> None:
    with TestClient(Litestar([ours, litestars])) as client:
        mine, theirs = client.get("/ours"), client.get("/litestars")
    assert mine.status_code == theirs.status_code == 200
    assert mine.content == theirs.content
    assert b"id: 8\r\nevent: tool_result\r\ndata: two\r\ndata: lines\r\n\r\n" in mine.content
    assert dict(mine.headers) == dict(theirs.headers)
