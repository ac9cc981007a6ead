"""A long-running process's heap, once it has started.

What a process builds to start (modules, the app and its routes, schemas, the wiring)
lives as long as the process: frozen (`gc.freeze`), the cyclic garbage collector no
longer walks it on each of its full collections, which otherwise visit every object
the process holds (a few hundred thousand here) to free the few a request leaves
behind. The start's own garbage is collected first, so nothing of it is kept.
"""

from __future__ import annotations

import gc


def freeze_started_heap() -> None:
    """Collect what the start left behind, then exempt everything alive from collection."""
    gc.collect()
    gc.freeze()
