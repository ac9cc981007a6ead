"""Which of several processes is the active one for a job (a view's projection, say).

Every process that can do the job contends for its advisory lock (`AdvisoryLocks`);
the holder does the job, the others stand by and take over when it goes. Losing the
locks' connection loses the lock: `lead` then stops the job and contends again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine

import psycopg

from adapters.postgres.advisory_locks import AdvisoryLocks

log = logging.getLogger(__name__)

Job = Callable[[], Coroutine[object, object, None]]


async def lead(locks: AdvisoryLocks, name: str, job: Job, *, poll: float = 1.0) -> None:
    """Run `job` while this process holds `name`; stand by while another does."""
    while True:
        await _acquire(locks, name, poll)
        running = asyncio.create_task(job(), name=name)
        watching = asyncio.create_task(_until_lost(locks, poll), name=f"{name} lock")
        try:
            done, _ = await asyncio.wait({running, watching}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (running, watching):
                task.cancel()
            for task in (running, watching):
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        if running in done:
            return running.result()
        log.warning("lost the lock of %s; contending again", name)


async def _acquire(locks: AdvisoryLocks, name: str, poll: float) -> None:
    announced = False
    while True:
        try:
            if await locks.try_lock(name):
                log.info("active for %s", name)
                return
        except psycopg.OperationalError as e:
            log.warning("cannot contend for %s (%s); retrying", name, e)
        if not announced:
            log.info("standing by for %s", name)
            announced = True
        await asyncio.sleep(poll)


async def _until_lost(locks: AdvisoryLocks, poll: float) -> None:
    generation = locks.generation
    while await locks.alive() and locks.generation == generation:
        await asyncio.sleep(poll * 5)
