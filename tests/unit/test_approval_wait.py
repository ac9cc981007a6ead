"""`across_approval`: a chat stream held open while its run waits for a human, bounded."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from uuid import uuid4

from litestar.response import ServerSentEventMessage

from adapters.http.streams.approval_wait import across_approval
from schemas import sse

RUN = uuid4()
WAITING = sse.Done(
    version=5, timestamp=datetime.now(UTC), status="waiting_confirmation", message_id="4",
    tokens_used=10, run_id=RUN, reason="waiting",
)  # fmt: skip


def msg(event: str, id_: int | None = None) -> ServerSentEventMessage:
    return ServerSentEventMessage(data="{}", event=event, id=id_)


class Feed:
    """Messages, then (optionally) silence until released; remembers being closed."""

    def __init__(self, *before: ServerSentEventMessage) -> None:
        self.before, self.after = before, [msg("tool_result", 7), msg("done", 8)]
        self.release = asyncio.Event()
        self.closed = False

    async def messages(self) -> AsyncIterator[ServerSentEventMessage]:
        try:
            for m in self.before:
                yield m
            await self.release.wait()
            for m in self.after:
                yield m
        finally:
            self.closed = True


async def events(stream: AsyncIterator[ServerSentEventMessage]) -> list[tuple[str | None, object]]:
    return [(m.event, m.id) async for m in stream]


async def test_a_run_still_waiting_after_the_wait_ends_the_stream_with_an_unstored_done() -> None:
    feed = Feed(msg("tool_call", 4), msg("confirm_required", 5))
    checks: list[int] = []

    async def waiting() -> sse.Done | None:
        checks.append(1)
        return WAITING

    got = await events(across_approval(feed.messages(), 0.01, waiting))
    assert got == [("tool_call", 4), ("confirm_required", 5), ("done", None)]
    assert checks == [1] and feed.closed


async def test_an_answer_in_time_lets_the_stream_go_on_to_the_runs_end() -> None:
    feed = Feed(msg("confirm_required", 5), msg("confirmed", 6))

    async def answered() -> sse.Done | None:
        feed.release.set()  # the run goes on: its next events come
        return None

    got = await events(across_approval(feed.messages(), 0.01, answered))
    assert got == [("confirm_required", 5), ("confirmed", 6), ("tool_result", 7), ("done", 8)]


async def test_no_question_no_clock() -> None:
    feed = Feed(msg("message", 2))

    async def never() -> sse.Done | None:
        raise AssertionError("no approval was asked: nothing to wait for")

    stream = across_approval(feed.messages(), 0.0, never)
    assert (await anext(stream)).event == "message"
    pending = asyncio.ensure_future(anext(stream))
    await asyncio.sleep(0.05)
    assert not pending.done()  # no wait applies: the stream just stays open
    feed.release.set()
    assert (await pending).event == "tool_result"
    await stream.aclose()
    assert feed.closed
