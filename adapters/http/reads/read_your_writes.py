"""Read-your-writes for queries: wait on a read model's NOTIFY, holding no store thread.

Each view announces its new position on its own channel when a batch commits
(`projections.view.View.channel`). One listener task per process keeps the latest
position of every view from those notifications, on an async connection of its own;
a query that must see a write awaits an asyncio event fed by that task. Commands
never wait here: they answer from what they wrote. `waits` counts the waits, so a
test can tell that a command did not wait on a read model.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

import psycopg
from psycopg import sql

from application.bridge import SyncBridge
from projections.view import TRACKING_TABLE

log = logging.getLogger(__name__)

WAIT = 2.0  # seconds a query waits for a read model before answering from the log


class ViewWaiter:
    """Positions of the read models as their notifications announce them."""

    def __init__(
        self,
        database_url: str,
        views: dict[str, str],
        heads: dict[str, Callable[[], int | None]],
        bridge: SyncBridge,
        *,
        retry: float = 1.0,
    ) -> None:
        self.database_url = database_url
        self.channels = views  # view name -> NOTIFY channel
        self.heads = heads  # view name -> the newest notification id of the log it reads
        self.bridge = bridge
        self.positions = dict.fromkeys(views, 0)
        self.waits = 0  # how many times a handler waited on a read model
        self.retry = retry
        self._changed = {name: asyncio.Event() for name in views}
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._listen(), name="read-your-writes listener")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def wait_for(self, view: str, notification_id: int, timeout: float = WAIT) -> bool:
        """Until `view` has applied `notification_id`; False after `timeout` seconds."""

        async def applied() -> bool:
            return self.positions[view] >= notification_id

        return await self.until(view, applied, timeout)

    async def caught_up(self, view: str, timeout: float = WAIT) -> bool:
        """Until `view` has what its log held when asked, so a caller sees their own
        writes; False after `timeout` seconds (then answer with what there is)."""
        head = await self.bridge(self.heads[view])
        return await self.wait_for(view, head or 0, timeout)

    async def until(
        self, view: str, check: Callable[[], Awaitable[bool]], timeout: float = WAIT
    ) -> bool:
        """Until `check()` holds, trying again each time `view` moves; False on timeout."""
        self.waits += 1
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            changed = self._changed[view]
            if await check():
                return True
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), remaining)

    async def _listen(self) -> None:
        while True:
            try:
                async with await psycopg.AsyncConnection.connect(
                    self.database_url, autocommit=True
                ) as conn:
                    for channel in self.channels.values():
                        await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))
                    await self._read_positions(conn)
                    async for note in conn.notifies():
                        self._moved(note.channel, int(note.payload))
            except (psycopg.OperationalError, ValueError) as e:
                log.warning("read-your-writes listener lost Postgres (%s); retrying", e)
                await asyncio.sleep(self.retry)

    async def _read_positions(self, conn: psycopg.AsyncConnection[tuple[object, ...]]) -> None:
        cur = await conn.execute(
            f"SELECT application_name, notification_id FROM {TRACKING_TABLE} "
            "WHERE application_name = ANY(%s)",
            (list(self.channels),),
        )
        for name, position in await cur.fetchall():
            self._moved(self.channels[str(name)], int(str(position)))

    def _moved(self, channel: str, position: int) -> None:
        for name, view_channel in self.channels.items():
            if view_channel == channel and position > self.positions[name]:
                self.positions[name] = position
                # Wake every waiter of this view: swap in a fresh event, set the old one.
                event, self._changed[name] = self._changed[name], asyncio.Event()
                event.set()
