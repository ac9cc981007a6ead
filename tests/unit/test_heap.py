"""A started process's heap: frozen once built, its start's garbage collected first."""

from __future__ import annotations

import gc
import weakref

from adapters.processes.heap import freeze_started_heap


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def test_the_starts_garbage_is_collected_and_what_lives_is_frozen() -> None:
    garbage, kept = Node(), Node()
    garbage.other, kept.other = Node(), Node()
    garbage.other.other = garbage  # a cycle: only the collector frees it
    gone = weakref.ref(garbage)
    del garbage
    gc.disable()  # no collection but the one under test
    try:
        freeze_started_heap()
        assert gone() is None, "a cycle left by the start must not be frozen for good"
        assert gc.get_freeze_count() > 0 and not any(o is kept for o in gc.get_objects())
    finally:
        gc.unfreeze()
        gc.enable()
