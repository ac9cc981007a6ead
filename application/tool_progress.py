"""A tool call's live word while it runs: `running` when its execution starts (after any
approval), then how long it has been running, every few seconds. Live only (through the
`DeltaSink`, like a turn's deltas): nothing of it is stored, so the log, the context and
replay never see it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from uuid import UUID

from application.ports import DeltaSink
from domain.conversation import ToolProgress, ToolRunning

PROGRESS_EVERY = 5.0  # seconds between a running tool's progress words

log = logging.getLogger(__name__)


@asynccontextmanager
async def announced(
    live: DeltaSink | None,
    session_id: UUID,
    tool_use_id: str,
    name: str,
    every: float = PROGRESS_EVERY,
) -> AsyncIterator[None]:
    """Around one tool call's execution: says it runs, and for how long, until it ends."""
    if live is None:
        yield
        return
    await _say(live, session_id, ToolRunning(tool_use_id, name))
    ticker = asyncio.create_task(_tick(live, session_id, tool_use_id, name, every))
    try:
        yield
    finally:
        ticker.cancel()


async def _tick(
    live: DeltaSink, session_id: UUID, tool_use_id: str, name: str, every: float
) -> None:
    waited = 0.0
    while True:
        await asyncio.sleep(every)
        waited += every
        await _say(live, session_id, ToolProgress(tool_use_id, f"{name}: running for {waited:g} s"))


async def _say(live: DeltaSink, session_id: UUID, item: ToolRunning | ToolProgress) -> None:
    try:
        await live.publish(session_id, item)
    except Exception as e:  # a live preview: the call goes on whatever becomes of it
        log.warning("could not send a tool call's progress: %s", e)
