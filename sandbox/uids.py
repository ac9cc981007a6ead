"""Host uids for sandboxed runs.

A root server runs each sandbox as an unprivileged host uid that no other run of
this process holds at the same time: the kernel enforces RLIMIT_NPROC on every uid
but root's, and a run that got out of its namespaces would still be a stranger to
everything on the host, other runs' work directories included. A server that is
not root runs every sandbox as itself.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator

from schemas.sandbox import SandboxUnavailable

BASE = 1_900_000_000  # far above any account's uid and the usual subuid ranges
COUNT = 4096


class HostUids:
    """A pool of host uids, one leased per run."""

    def __init__(self, base: int = BASE, count: int = COUNT) -> None:
        self.base, self.count = base, count
        self._taken: set[int] = set()
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def lease(self) -> Iterator[int]:
        """A uid for one run: a free one of the pool for root, else our own."""
        if os.geteuid() != 0:
            yield os.getuid()
            return
        with self._lock:
            free = next(
                (u for u in range(self.base, self.base + self.count) if u not in self._taken), None
            )
            if free is None:
                raise SandboxUnavailable(f"all {self.count} sandbox uids are in use")
            self._taken.add(free)
        try:
            yield free
        finally:
            with self._lock:
                self._taken.discard(free)
