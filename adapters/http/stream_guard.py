"""Streams that end when their caller loses the right to them.

An SSE stream is authorized when it opens, but may stay open for hours; a member
removed from the team, a revoked API key or a logout must not keep receiving events.
`while_allowed` asks again every `every` seconds (whether messages flow or not) and
ends the stream at the first no. What it asks (`permit`) checks in full only when the
accounts log has moved since its last full check (every right is an event there) or
its API key has expired: with nothing changed, a check is a comparison of two numbers,
the head read once a second by the whole process.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar
from uuid import UUID

from adapters.http.deps import Access
from adapters.http.timed_reads import Ended, TimedOut, TimedReads
from application.tokens import Principal

T = TypeVar("T")
Allowed = Callable[[], Awaitable[bool]]
RECHECK = 2.0  # seconds between checks: a removed member's stream ends within ~2 s


def permit(access: Access, principal: Principal, session_id: UUID) -> Allowed:
    """Whether `principal` may still see the session (for `while_allowed`)."""
    seen = -1  # the accounts head at the last full check

    async def allowed() -> bool:
        nonlocal seen
        if principal.api_key_id is not None and principal.expires_at <= time.time():
            return False  # a key's expiry is no event: its time is its own
        head = await access.accounts_head()
        if head == seen:
            return True
        if not await access.still_sees(principal, session_id):
            return False
        seen = head
        return True

    return allowed


async def while_allowed(
    items: AsyncIterator[T], allowed: Allowed, every: float = RECHECK
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
