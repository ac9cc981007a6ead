"""Connecting to NATS, and waiting for it while it is away."""

from __future__ import annotations

import asyncio
import logging

import nats
from nats.aio.client import Client as NATS
from nats.errors import Error as NatsError

log = logging.getLogger(__name__)


class Backoff:
    """Exponential backoff with a ceiling; `reset()` after a success."""

    def __init__(self, first: float = 0.05, ceiling: float = 2.0) -> None:
        self.first = first
        self.ceiling = ceiling
        self.delay = first

    async def wait(self) -> None:
        await asyncio.sleep(self.delay)
        self.delay = min(self.delay * 2, self.ceiling)

    def reset(self) -> None:
        self.delay = self.first


async def connect_nats(url: str, *, name: str) -> NATS:
    """Connect, retrying until NATS answers; later drops reconnect by themselves."""
    backoff = Backoff(ceiling=2.0)
    while True:
        try:
            return await nats.connect(
                url,
                name=name,
                connect_timeout=2,
                allow_reconnect=True,
                max_reconnect_attempts=-1,
                reconnect_time_wait=0.25,
                ping_interval=5,
                max_outstanding_pings=2,
                error_cb=_log_error,
            )
        except (TimeoutError, NatsError, OSError) as e:
            log.warning("NATS at %s not reachable (%s); retrying", url, e or type(e).__name__)
            await backoff.wait()


async def _log_error(e: Exception) -> None:
    log.debug("NATS client: %s", e)
