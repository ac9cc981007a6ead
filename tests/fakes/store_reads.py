"""Watching a store's reads of aggregates' events, for the tests that count them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eventsourcing.application import Application


def reads_of(app: Application[Any]) -> list[object]:
    """The ids of the aggregates whose events `app`'s recorder reads from now on, in order."""
    reads: list[object] = []
    recorder = app.recorder
    select = recorder.select_events

    def watched(originator_id: Any, **kwargs: Any) -> Sequence[Any]:  # noqa: ANN401
        reads.append(originator_id)
        return select(originator_id, **kwargs)

    recorder.select_events = watched  # type: ignore[method-assign]
    return reads
