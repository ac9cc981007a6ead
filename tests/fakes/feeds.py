"""An event feed for projection tests: fixed batches, repeated and overlapping at will."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

from eventsourcing.persistence import Notification


class ListFeed:
    """Hands out fixed batches, each as often as it is listed; counts the acks."""

    def __init__(self, batches: list[Sequence[Notification]]) -> None:
        self._batches = batches
        self.acked = 0
        self.asked_after: list[int] = []  # the positions it was asked to start after

    async def batches(self, after: int) -> AsyncIterator[ListFeed.Batch]:
        self.asked_after.append(after)
        for notifications in self._batches:
            yield ListFeed.Batch(self, notifications)

    class Batch:
        def __init__(self, feed: ListFeed, notifications: Sequence[Notification]) -> None:
            self.feed = feed
            self.notifications = notifications

        async def ack(self) -> None:
            self.feed.acked += 1
