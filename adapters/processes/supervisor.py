"""Restarts an embedded server that died, with backoff, while its owner runs.

A thread, not a task: starting Postgres blocks (pg_ctl waits for it), and the check
must go on while the event loop is busy. Only a server whose process is gone is
restarted; a server that is alive but slow (or stopped with SIGSTOP) is left alone,
since killing it would turn a pause into an outage.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Protocol

log = logging.getLogger(__name__)


class Supervised(Protocol):
    def running(self) -> bool: ...

    def restart(self) -> None: ...


class _Watch:
    """One server's backoff between failed restarts."""

    def __init__(self, name: str, server: Supervised, first: float, ceiling: float) -> None:
        self.name = name
        self.server = server
        self.first = first
        self.ceiling = ceiling
        self.delay = first
        self.not_before = 0.0
        self.down = False


class Supervisor:
    """Checks every `interval` seconds that each server runs, restarting the dead ones."""

    def __init__(
        self,
        servers: dict[str, Supervised],
        *,
        interval: float = 0.5,
        first_backoff: float = 0.5,
        max_backoff: float = 10.0,
    ) -> None:
        self.interval = interval
        self._watches = [_Watch(n, s, first_backoff, max_backoff) for n, s in servers.items()]
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="embedded-supervisor", daemon=True)

    def start(self) -> Supervisor:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop checking (waits for a restart under way), before the servers are stopped."""
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(60)

    def _run(self) -> None:
        while not self._stopping.wait(self.interval):
            for watch in self._watches:
                if self._stopping.is_set():
                    return
                self._check(watch)

    def _check(self, watch: _Watch) -> None:
        if watch.server.running():
            return
        if not watch.down:
            log.warning("embedded %s is down; restarting it", watch.name)
            watch.down = True
        if time.monotonic() < watch.not_before:
            return
        try:
            watch.server.restart()
        except Exception as e:  # noqa: BLE001 - any failure: try again after a while
            log.warning(
                "embedded %s did not restart (%s); next try in %.1fs", watch.name, e, watch.delay
            )
            watch.not_before = time.monotonic() + watch.delay
            watch.delay = min(watch.delay * 2, watch.ceiling)
            return
        log.info("embedded %s restarted", watch.name)
        watch.down, watch.delay = False, watch.first
