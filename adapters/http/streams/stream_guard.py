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

from adapters.http.access import Access
from application.account_store import read_as_of
from application.tokens import Principal

T = TypeVar("T")
Allowed = Callable[[], Awaitable[bool]]
RECHECK = 2.0  # seconds between checks: with the head read each second, ends within ~3 s


def permit(access: Access, principal: Principal, session_id: UUID) -> Allowed:
    """Whether `principal` may still see the session (for `while_allowed`); the request
    that opens the stream has checked it as of the head it read (if it read one)."""
    checked = read_as_of()
    seen = -1 if checked is None else checked  # the accounts head at the last full check

    async def allowed() -> bool:
        nonlocal seen
        if principal.api_key_id is not None and principal.expires_at <= time.time():
            return False  # a key's expiry is no event: its time is its own
        head = await access.accounts_head()
        if head <= seen:  # nothing written since (the process's head may be older)
            return True
        if not await access.still_sees(principal, session_id, head):
            return False
        seen = head
        return True

    return allowed


async def while_allowed(
    items: AsyncIterator[T], allowed: Allowed, every: float = RECHECK
) -> AsyncIterator[T]:
    """`items` for as long as `allowed()` says yes, asked every `every` seconds.

    The asking is a task of its own, so an item costs nothing more than a flag; a no
    while the stream waits for its next item interrupts that wait (a cancellation of
    this task that is told apart from any other), a no while an item is being sent
    ends the stream as soon as it is sent.
    """
    consumer = asyncio.current_task()
    assert consumer is not None
    state = _Guard()
    watcher = asyncio.create_task(_watch(allowed, every, consumer, state))
    try:
        while not state.denied:
            state.waiting = True
            try:
                item = await anext(items)
            except StopAsyncIteration:
                return
            except asyncio.CancelledError:
                if state.denied and state.interrupted:
                    consumer.uncancel()  # ours, not the server's: the stream just ends
                    return
                raise
            finally:
                state.waiting = False
            yield item
    finally:
        watcher.cancel()
        await _close(items)


class _Guard:
    """What the watcher and the stream share (one event loop: no lock needed)."""

    def __init__(self) -> None:
        self.waiting = False  # the stream is awaiting its next item
        self.denied = False
        self.interrupted = False  # the watcher cancelled that wait


async def _watch(
    allowed: Allowed, every: float, consumer: asyncio.Task[object], state: _Guard
) -> None:
    while True:
        await asyncio.sleep(every)
        if not await allowed():
            state.denied = True
            if state.waiting:
                state.interrupted = True
                consumer.cancel()
            return


async def _close(items: AsyncIterator[T]) -> None:
    aclose = getattr(items, "aclose", None)
    if aclose is not None:
        await aclose()
