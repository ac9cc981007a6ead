"""Where rate limits are counted (the `Counters` and `LoginFailures` ports) and the
in-process counters.

`RateLimits` (adapters/http/middleware/limits.py) asks its counters to count a request, or to
open, refresh and close a stream slot. `InMemoryCounters` count in this process alone:
exact sliding windows (a log of hit times per caller) and held slots; the API's
counters are in Postgres, shared by its replicas (adapters/postgres/limit_counters.py).
`LoginLimits` (adapters/http/middleware/login_limits.py) counts failed logins the same way:
`InMemoryLoginFailures` here, `PostgresLoginFailures` (adapters/postgres/login_failures.py)
across replicas.
"""

from __future__ import annotations

import time
import uuid
from collections import deque
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

Clock = Callable[[], float]
Counted = Literal["requests", "uploads"]  # the counters a request moves (streams are slots)
WINDOW = 60.0
LOGIN_WINDOW = 15 * 60.0  # seconds failed logins are counted for


class SlidingWindow:
    """At most `limit` hits per key in any `window` seconds (a log of hit times per key)."""

    def __init__(self, limit: int, window: float = WINDOW, *, clock: Clock = time.monotonic):
        check_limit(limit)
        self.limit, self.window, self._clock = limit, window, clock
        self._hits: dict[str, deque[float]] = {}
        self._next_sweep = clock() + window

    def retry_after(self, key: str) -> float:
        """Seconds until `key` may hit again; 0 when it may hit now."""
        now = self._clock()
        hits = self._hits.get(key)
        if hits is None:
            return 0.0
        while hits and hits[0] <= now - self.window:
            hits.popleft()
        if len(hits) < self.limit:
            return 0.0
        return hits[len(hits) - self.limit] + self.window - now

    def hit(self, key: str) -> None:
        now = self._clock()
        self._hits.setdefault(key, deque()).append(now)
        if now >= self._next_sweep:  # forget callers who went quiet, so memory stays bounded
            self._hits = {k: h for k, h in self._hits.items() if h and h[-1] > now - self.window}
            self._next_sweep = now + self.window


class ConcurrencyLimit:
    """At most `limit` holders per key at once."""

    def __init__(self, limit: int) -> None:
        check_limit(limit)
        self.limit = limit
        self._held: dict[str, int] = {}

    def acquire(self, key: str) -> bool:
        held = self._held.get(key, 0)
        if held >= self.limit:
            return False
        self._held[key] = held + 1
        return True

    def release(self, key: str) -> None:
        held = self._held.get(key, 0) - 1
        if held > 0:
            self._held[key] = held
        else:
            self._held.pop(key, None)

    @property
    def total(self) -> int:
        """Slots held by all keys (the open SSE streams of this process)."""
        return sum(self._held.copy().values())  # a copy: metrics read this from a thread


@dataclass(frozen=True)
class Over:
    """A counter with no room: which, and seconds until it has room."""

    limit: Counted
    retry_after: float


# A stream request's outcome: (its slot, None) admitted; (None, None) no slot free;
# (None, Over) no room for the request (no slot kept).
StreamAdmission = tuple[str | None, Over | None]


class CountersUnavailable(Exception):
    """The counters could not be reached (the limits then fail open)."""


class Counters(Protocol):
    """Where the limits are counted: this process alone, or a store every replica shares."""

    @property
    def lease(self) -> float | None:
        """Seconds a stream slot lasts unless refreshed (None: until closed)."""

    def hit(self, key: str, *, requests: int, uploads: int | None) -> Over | None:
        """Count a request (and an upload, with its limit), or say which is full."""

    def open_stream(self, key: str, limit: int) -> str | None:
        """A stream slot of `key`'s, or None when `limit` are open."""

    def close_stream(self, slot: str) -> None: ...

    def admit_stream(self, key: str, *, requests: int, streams: int) -> StreamAdmission:
        """`open_stream`, then `hit` (the slot given back if the request is over): one
        step where the counters can make it one."""

    def refresh(self, slots: Collection[str]) -> None:
        """Extend the leases of these open slots (this process's)."""


class InMemoryCounters:
    """The counters of this process alone: exact sliding windows and held slots."""

    lease: float | None = None

    def __init__(self, clock: Clock = time.monotonic) -> None:
        self._clock = clock
        self._windows: dict[tuple[Counted, int], SlidingWindow] = {}
        self._slots: dict[int, ConcurrencyLimit] = {}
        self._open: dict[str, tuple[str, int]] = {}  # slot -> (key, limit)

    def hit(self, key: str, *, requests: int, uploads: int | None) -> Over | None:
        limits: list[tuple[Counted, int]] = [("requests", requests)]
        if uploads is not None:
            limits.insert(0, ("uploads", uploads))
        windows = [(name, self._window(name, limit)) for name, limit in limits]
        for name, window in windows:
            wait = window.retry_after(key)
            if wait > 0:
                return Over(name, wait)
        for _, window in windows:
            window.hit(key)
        return None

    def open_stream(self, key: str, limit: int) -> str | None:
        if not self._slots.setdefault(limit, ConcurrencyLimit(limit)).acquire(key):
            return None
        slot = uuid.uuid4().hex
        self._open[slot] = (key, limit)
        return slot

    def close_stream(self, slot: str) -> None:
        key, limit = self._open.pop(slot)
        self._slots[limit].release(key)

    def admit_stream(self, key: str, *, requests: int, streams: int) -> StreamAdmission:
        return admit_in_two_steps(self, key, requests=requests, streams=streams)

    def refresh(self, slots: Collection[str]) -> None:
        """Nothing to do: a slot here lasts until closed."""

    def _window(self, name: Counted, limit: int) -> SlidingWindow:
        key = (name, limit)
        if key not in self._windows:
            self._windows[key] = SlidingWindow(limit, clock=self._clock)
        return self._windows[key]


def admit_in_two_steps(
    counters: Counters, key: str, *, requests: int, streams: int
) -> StreamAdmission:
    """`Counters.admit_stream` as a slot taken, then the request counted."""
    slot = counters.open_stream(key, streams)
    if slot is None:
        return None, None
    over = counters.hit(key, requests=requests, uploads=None)
    if over is not None:
        counters.close_stream(slot)
        return None, over
    return slot, None


def check_limit(limit: int) -> None:
    if limit < 1:
        raise ValueError(f"a rate limit must be at least 1, not {limit}")


@dataclass(frozen=True)
class Locked:
    """A key with no attempt left: seconds until its oldest counted failure leaves the window."""

    retry_after: float


class LoginFailures(Protocol):
    """Failed logins per key (an account, an address) in a sliding window. An attempt is
    counted as a failure before its password is checked, so attempts in flight at once
    cannot pass the limit together; one that did not fail is released."""

    def reserve(self, keys: Sequence[str], limit: int) -> str | Locked:
        """Count an attempt under every key (its id), unless one of them has `limit` already."""

    def release(self, attempt: str, keys: Sequence[str]) -> None:
        """The attempt did not fail: it counts no more."""


class InMemoryLoginFailures:
    """Failed logins in this process alone: a log of (time, attempt) per key."""

    def __init__(self, clock: Clock = time.monotonic, *, window: float = LOGIN_WINDOW) -> None:
        self._clock, self.window = clock, window
        self._log: dict[str, deque[tuple[float, str]]] = {}
        self._next_sweep = clock() + window

    def reserve(self, keys: Sequence[str], limit: int) -> str | Locked:
        check_limit(limit)
        now = self._clock()
        if now >= self._next_sweep:  # forget keys that went quiet, so memory stays bounded
            self._log = {
                k: log for k, log in self._log.items() if log and log[-1][0] > now - self.window
            }
            self._next_sweep = now + self.window
        waits = []
        for key in keys:
            log = self._log.setdefault(key, deque())
            while log and log[0][0] <= now - self.window:
                log.popleft()
            if len(log) >= limit:  # room once all but limit - 1 of them have left
                waits.append(log[len(log) - limit][0] + self.window - now)
        if waits:
            return Locked(max(waits))
        attempt = uuid.uuid4().hex
        for key in keys:
            self._log[key].append((now, attempt))
        return attempt

    def release(self, attempt: str, keys: Sequence[str]) -> None:
        for key in keys:
            log = self._log.get(key, deque())
            self._log[key] = deque(entry for entry in log if entry[1] != attempt)
