"""The deliberate bridge from async callers to the synchronous event store.

eventsourcing and its Postgres recorder are synchronous (psycopg + threads): it has no
asyncio API (pyeventsourcing/eventsourcing#233). Async code calls them through one
thread pool no larger than the connection pool, so a burst of commands queues for a
thread instead of for a connection while holding one. It is small (4 threads unless
TOKENDANCE_STORE_THREADS says otherwise): a statement's reply hands Python's lock back
to its thread, and with more threads than cores those hand-offs cost more CPU than the
statement (`bench.stack_floor`).
A call runs in a copy of its caller's context, as with `asyncio.to_thread`: what a run's
task set (the hold on its session) holds for the commands it calls.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


class SyncBridge:
    """Runs blocking calls on a bounded thread pool, awaited from the event loop."""

    def __init__(self, max_workers: int) -> None:
        self.max_workers = max_workers
        self._executor = ThreadPoolExecutor(max_workers, thread_name_prefix="eventstore")

    async def __call__(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        loop = asyncio.get_running_loop()
        call = functools.partial(contextvars.copy_context().run, fn, *args, **kwargs)
        return await loop.run_in_executor(self._executor, call)

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)
