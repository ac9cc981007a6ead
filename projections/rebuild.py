"""Rebuild a view from the event store (not from NATS), in one transaction."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from uuid import UUID

from eventsourcing.persistence import ApplicationRecorder, Mapper

from projections.view import View, decode


@dataclass(frozen=True)
class RebuildReport:
    projection: str
    events: int
    seconds: float
    position: int

    @property
    def events_per_second(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else 0.0


def rebuild(
    view: View,
    recorder: ApplicationRecorder,
    mapper: Mapper[UUID],
    *,
    page_size: int = 1000,
    on_progress: Callable[[int, int], None] | None = None,
) -> RebuildReport:
    """Clear the view and apply the whole log to it.

    The view's tracking row stays locked throughout, so a live runner waits and then
    carries on after the rebuilt position; readers see the old rows until commit.
    `on_progress(position, target)` is called after each page.
    """
    started = time.perf_counter()
    applied = 0
    with view.datastore.transaction(commit=True) as curs:
        view.lock_position(curs)
        target = recorder.max_notification_id() or 0
        view.clear(curs)
        start = 1
        while start <= target:
            page = recorder.select_notifications(start, page_size, stop=target)
            if not page:
                break
            for n in page:
                view.apply_one(curs, n.id, decode(mapper, view.name, n.id, n))
            applied += len(page)
            start = page[-1].id + 1
            if on_progress is not None:
                on_progress(page[-1].id, target)
        view.set_position(curs, target)
    return RebuildReport(view.name, applied, time.perf_counter() - started, target)
