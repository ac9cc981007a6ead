"""Keeps the views of one log up to date from its event feed: in order, exactly once."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ParamSpec, TypeVar
from uuid import UUID

import psycopg
from eventsourcing.persistence import InterfaceError, Mapper, Notification, OperationalError

from application.bridge import SyncBridge
from application.ports import EventFeed, FeedError
from projections.view import Event, ProjectionError, View, domain_event
from projections.view_group import GroupWriteFailed, ViewGroup

log = logging.getLogger(__name__)

TRANSIENT = (OperationalError, InterfaceError, psycopg.OperationalError)
P = ParamSpec("P")
T = TypeVar("T")


@dataclass
class ViewProgress:
    """One view under a runner: what it has applied here, and why it stopped."""

    view: View
    applied: int = 0
    error: ProjectionError | None = None


class ProjectionRunner:
    """Applies each batch from the feed to every view of the log, then acks it.

    One decode per event and one transaction per batch for all the views: their
    updates and tracking rows commit together, so a batch delivered again (an ack
    lost, a crash after commit) changes nothing. An event that cannot be decoded
    stops every view, naming it; one a view cannot apply stops that view (the batch
    is then applied view by view to find it) while the others go on. `run` ends,
    raising the first `ProjectionError`, once no view is left.
    """

    def __init__(
        self, views: Sequence[View], *, mapper: Mapper[UUID], feed: EventFeed, bridge: SyncBridge
    ) -> None:
        self.group = ViewGroup(views)
        self.progress = {v.name: ViewProgress(v) for v in views}
        self.mapper = mapper
        self.feed = feed
        self.bridge = bridge

    @property
    def live(self) -> list[str]:
        """The views still being kept up to date."""
        return [name for name, p in self.progress.items() if p.error is None]

    @property
    def error(self) -> ProjectionError | None:
        """The first view's error once every view has stopped."""
        errors = [p.error for p in self.progress.values()]
        return None if None in errors else errors[0]

    async def run(self) -> None:
        try:
            await self._consume()
        except FeedError as e:
            for name in self.live:
                self._stop(name, ProjectionError(name, e.position, e.message))
        error = self.error
        if error is not None:
            raise error

    async def _consume(self) -> None:
        positions = await self.bridge(self.group.positions)
        async for batch in self.feed.batches(after=min(positions.values())):
            items, failure = self._decode(batch.notifications)
            await self._apply(items)  # what precedes a bad event still counts
            if failure is not None:
                nid, cause = failure
                for name in self.live:
                    self._stop(name, ProjectionError.at(name, nid, cause))
            if not self.live:
                return
            await batch.ack()

    def _decode(
        self, notifications: Sequence[Notification]
    ) -> tuple[list[tuple[int, Event]], tuple[int, BaseException] | None]:
        items: list[tuple[int, Event]] = []
        for n in notifications:
            try:
                items.append((n.id, domain_event(self.mapper, n)))
            except Exception as e:
                return items, (n.id, e)
        return items, None

    async def _apply(self, items: list[tuple[int, Event]]) -> None:
        live = self.live
        try:
            counts = await self._retrying(self.group.apply_batch, items, live)
        except GroupWriteFailed:
            counts = {}
            for name in live:
                try:
                    counts[name] = await self._retrying(self.progress[name].view.apply_batch, items)
                except ProjectionError as e:
                    self._stop(name, e)
        for name, applied in counts.items():
            self.progress[name].applied += applied

    async def _retrying(self, write: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """`write` on a store thread, again and again while the database is away."""
        delay = 0.05
        while True:
            try:
                return await self.bridge(write, *args, **kwargs)
            except TRANSIENT as e:
                log.warning("projections %s cannot write (%s); retrying", self.live, e)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)

    def _stop(self, name: str, error: ProjectionError) -> None:
        self.progress[name].error = error
        log.error("%s", error)
