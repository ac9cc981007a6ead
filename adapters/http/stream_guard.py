"""Streams that end when their caller loses the right to them.

An SSE stream is authorized when it opens, but may stay open for hours; a member
removed from the team, a revoked API key or a logout must not keep receiving events.
`while_allowed` asks again every `every` seconds (whether messages flow or not) and
ends the stream at the first no.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

from adapters.http.timed_reads import Ended, TimedOut, TimedReads

T = TypeVar("T")
RECHECK = 2.0  # seconds between checks: a removed member's stream ends within ~2 s


async def while_allowed(
    items: AsyncIterator[T], allowed: Callable[[], Awaitable[bool]], every: float = RECHECK
) -> AsyncIterator[T]:
    """`items` for as long as `allowed()` says yes, asked at least every `every` s."""
    loop = asyncio.get_running_loop()
    checked = loop.time()
    reads = TimedReads(items)
    try:
        while True:
            item = await reads.next(max(0.0, checked + every - loop.time()))
            if isinstance(item, Ended):
                return
            if not isinstance(item, TimedOut):
                yield item
            if loop.time() - checked >= every:
                if not await allowed():
                    return
                checked = loop.time()
    finally:
        await reads.aclose()
