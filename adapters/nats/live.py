"""Live deltas of a streaming model turn on core NATS: fast, not stored, may be lost."""

from __future__ import annotations

from collections.abc import Callable
from uuid import UUID

import msgspec
from nats.aio.client import Client as NATS
from nats.errors import Error as NatsError

from domain.conversation import TextDelta, ThinkingDelta


def live_subject(stream: str, session_id: UUID | str) -> str:
    return f"{stream.lower()}.live.{session_id}"


class NatsDeltaSink:
    """Publishes each delta on `<stream>.live.<session>`; drops it while NATS is away."""

    def __init__(self, connection: Callable[[], NATS | None], stream: str) -> None:
        self._connection = connection
        self._stream = stream

    async def publish(self, session_id: UUID, delta: TextDelta | ThinkingDelta) -> None:
        nc = self._connection()
        if nc is None or not nc.is_connected:
            return  # deltas are a live preview; the finished turn is stored anyway
        body = msgspec.json.encode(
            {
                "type": delta.type,
                "text": getattr(delta, "text", None) or getattr(delta, "thinking", ""),
            }
        )
        try:
            await nc.publish(live_subject(self._stream, session_id), body)
        except NatsError:
            return
