"""Waiting for what happens later: `eventually` (blocking) and `eventually_async`.

Both call `check` until it returns something truthy and return that value; past
`timeout` seconds they fail the test with an AssertionError naming what never happened
(`what`, or else the check's own source line) and the last value seen. An exception
from `check` ends the wait at once (a check may assert what must hold meanwhile).
Nothing here asserts how long anything took: `timeout` is only when to give up.
"""

from __future__ import annotations

import asyncio
import inspect
import linecache
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")

INTERVAL = 0.05  # seconds between two checks
TIMEOUT = 30.0  # seconds before giving up


def eventually(
    check: Callable[[], T],
    *,
    timeout: float = TIMEOUT,
    what: str | None = None,
    interval: float = INTERVAL,
) -> T:
    """`check()`'s first truthy value, polled every `interval` s for up to `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(never(check, what, timeout, value))
        time.sleep(min(interval, left))


async def eventually_async(
    check: Callable[[], Awaitable[T] | T],
    *,
    timeout: float = TIMEOUT,
    what: str | None = None,
    interval: float = INTERVAL,
) -> T:
    """As `eventually`, in the event loop: `check` may be a coroutine function."""
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        value: T = await found if inspect.isawaitable(found) else found
        if value:
            return value
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(never(check, what, timeout, value))
        await asyncio.sleep(min(interval, left))


def never(check: Callable[..., object], what: str | None, timeout: float, last: object) -> str:
    """The failure's message: what never happened, within how long, the last value."""
    return f"never happened within {timeout:g}s: {what or describe(check)} (last: {last!r})"


def describe(check: Callable[..., object]) -> str:
    """A check named by its source: `file:line: the line` (a lambda reads as itself)."""
    code = getattr(check, "__code__", None)
    if code is None:
        return repr(check)
    line = linecache.getline(code.co_filename, code.co_firstlineno).strip()
    name = getattr(check, "__qualname__", "check")
    where = f"{code.co_filename.rsplit('/tests/', 1)[-1]}:{code.co_firstlineno}"
    return f"{line} ({where})" if name.endswith("<lambda>") and line else f"{name} ({where})"
