"""Reading an async iterator with a time limit per wait, losing nothing.

`asyncio.wait_for(anext(items), t)` cancels the read on timeout, and with it an item the
iterator was about to give. `TimedReads` keeps the read in flight across timeouts, so
the next wait picks up where the last one stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Generic, TypeVar

T = TypeVar("T")


class TimedOut:
    """No item within the wait (the read goes on)."""


class Ended:
    """The iterator is exhausted."""


TIMED_OUT, ENDED = TimedOut(), Ended()


class TimedReads(Generic[T]):
    """The items of `items`, each waited for at most a given time."""

    def __init__(self, items: AsyncIterator[T]) -> None:
        self._items = items
        self._pending: asyncio.Future[T] | None = None

    async def next(self, timeout: float | None) -> T | TimedOut | Ended:
        """The next item, `TIMED_OUT` after `timeout` seconds (None: no limit), or `ENDED`."""
        if self._pending is None:
            self._pending = asyncio.ensure_future(anext(self._items))
        done, _ = await asyncio.wait({self._pending}, timeout=timeout)
        if not done:
            return TIMED_OUT
        pending, self._pending = self._pending, None
        try:
            return pending.result()
        except StopAsyncIteration:
            return ENDED

    async def aclose(self) -> None:
        """Stop the read in flight and close the iterator."""
        if self._pending is not None:
            self._pending.cancel()
            with contextlib.suppress(asyncio.CancelledError, StopAsyncIteration):
                await self._pending
            self._pending = None
        aclose = getattr(self._items, "aclose", None)
        if aclose is not None:
            await aclose()
