"""Live items on core NATS (a streaming turn's deltas, a running tool's start and
progress): fast, not stored, may be lost. Their wire shape is `schemas.live`."""

from __future__ import annotations

from collections.abc import Callable
from typing import assert_never
from uuid import UUID

from nats.aio.client import Client as NATS
from nats.errors import Error as NatsError

from domain.conversation import (
    LiveItem,
    TextDelta,
    ThinkingDelta,
    ThinkingStarted,
    ToolProgress,
    ToolRunning,
)
from schemas import live
from schemas.nats import Subjects


def to_wire(item: LiveItem) -> live.Live:
    match item:
        case TextDelta(text=text):
            return live.TextChunk(text)
        case ThinkingStarted():
            return live.ThinkingBegan()
        case ThinkingDelta(thinking=text):
            return live.ThinkingChunk(text)
        case ToolRunning(tool_use_id=tid, name=name):
            return live.ToolStarted(tid, name)
        case ToolProgress(tool_use_id=tid, message=message):
            return live.ToolProgressed(tid, message)
        case _:
            assert_never(item)


def from_wire(message: live.Live) -> LiveItem:
    match message:
        case live.TextChunk(text=text):
            return TextDelta(text)
        case live.ThinkingBegan():
            return ThinkingStarted()
        case live.ThinkingChunk(text=text):
            return ThinkingDelta(text)
        case live.ToolStarted(tool_use_id=tid, name=name):
            return ToolRunning(tid, name)
        case live.ToolProgressed(tool_use_id=tid, message=text):
            return ToolProgress(tid, text)
        case _:
            assert_never(message)


class NatsDeltaSink:
    """Publishes each delta on `<stream>.live.<session>`; drops it while NATS is away."""

    def __init__(self, connection: Callable[[], NATS | None], stream: str) -> None:
        self._connection = connection
        self._subjects = Subjects(stream)

    async def publish(self, session_id: UUID, delta: LiveItem) -> None:
        nc = self._connection()
        if nc is None or not nc.is_connected:
            return  # a live preview: what it previews is stored anyway
        body = live.encode(to_wire(delta))
        try:
            await nc.publish(self._subjects.live(session_id), body)
        except NatsError:
            return
