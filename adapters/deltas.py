"""Where live deltas go when nobody watches: replay, the demo's check, restarts, benches."""

from __future__ import annotations

from uuid import UUID

from domain.conversation import LiveItem


class NullDeltaSink:
    """`DeltaSink` that drops every delta, counting them (benches report the count)."""

    def __init__(self) -> None:
        self.count = 0

    async def publish(self, session_id: UUID, delta: LiveItem) -> None:
        self.count += 1
