"""A stream ends once its caller may no longer see it, quiet or busy."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from adapters.http.streams.stream_guard import while_allowed


async def ticks(every: float, closed: list[bool]) -> AsyncIterator[int]:
    n = 0
    try:
        while True:
            await asyncio.sleep(every)
            n += 1
            yield n
    finally:
        closed.append(True)


async def read(items: AsyncIterator[int]) -> list[int]:
    return [i async for i in items]


async def test_a_quiet_stream_ends_at_the_first_check_that_says_no_and_closes_its_source() -> None:
    allowed, closed = [True, False], []

    async def still() -> bool:
        return allowed.pop(0)

    got = await asyncio.wait_for(read(while_allowed(ticks(60, closed), still, every=0.05)), 5)
    assert got == [] and allowed == [] and closed == [True]


async def test_a_busy_stream_is_checked_too_and_loses_no_item_before_the_no() -> None:
    answers, closed = iter([True, True, False]), []

    async def still() -> bool:
        return next(answers)

    got = await asyncio.wait_for(read(while_allowed(ticks(0.01, closed), still, every=0.1)), 5)
    assert got == list(range(1, len(got) + 1)) and len(got) >= 10 and closed == [True]


async def test_a_stream_that_ends_by_itself_is_passed_through_whole() -> None:
    async def three() -> AsyncIterator[int]:
        for i in (1, 2, 3):
            yield i

    async def never() -> bool:
        raise AssertionError("not asked: the stream ended before a check was due")

    assert await read(while_allowed(three(), never, every=10)) == [1, 2, 3]
