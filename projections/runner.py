"""Keeps one view up to date from the event feed: in order, exactly once."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from uuid import UUID

import psycopg
from eventsourcing.persistence import InterfaceError, Mapper, Notification, OperationalError

from application.bridge import SyncBridge
from application.ports import EventFeed, FeedError
from projections.view import Event, ProjectionError, View, decode

log = logging.getLogger(__name__)

TRANSIENT = (OperationalError, InterfaceError, psycopg.OperationalError)


class ProjectionRunner:
    """Applies each batch from the feed to the view, then acks it.

    The view update and its tracking row commit together, so a batch delivered
    again (an ack lost, a crash after commit) changes nothing. An event that cannot
    be decoded or applied stops the runner with a `ProjectionError` naming it.
    """

    def __init__(
        self, view: View, *, mapper: Mapper[UUID], feed: EventFeed, bridge: SyncBridge
    ) -> None:
        self.view = view
        self.mapper = mapper
        self.feed = feed
        self.bridge = bridge
        self.applied = 0
        self.error: ProjectionError | None = None

    async def run(self) -> None:
        try:
            await self._consume()
        except FeedError as e:
            self.error = ProjectionError(self.view.name, e.position, e.message)
        except ProjectionError as e:
            self.error = e
        if self.error is not None:
            log.error("%s", self.error)
            raise self.error

    async def _consume(self) -> None:
        position = await self.bridge(self.view.position)
        async for batch in self.feed.batches(after=position):
            items, failure = self._decode(batch.notifications)
            await self._apply(items)  # what precedes a bad event still counts
            if failure is not None:
                raise failure
            await batch.ack()

    def _decode(
        self, notifications: Sequence[Notification]
    ) -> tuple[list[tuple[int, Event]], ProjectionError | None]:
        items: list[tuple[int, Event]] = []
        for n in notifications:
            try:
                items.append((n.id, decode(self.mapper, self.view.name, n.id, n)))
            except ProjectionError as e:
                return items, e
        return items, None

    async def _apply(self, items: list[tuple[int, Event]]) -> None:
        delay = 0.05
        while True:
            try:
                self.applied += await self.bridge(self.view.apply_batch, items)
                return
            except TRANSIENT as e:
                log.warning("projection %s cannot write (%s); retrying", self.view.name, e)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
