"""Rate limits per caller: requests per minute, open SSE streams, uploads per minute.

The caller is the authenticated user (`request.user.user_id`); before login (register,
login, refresh) it is the client address. Every request but the operational ones
(`/health`, `/readiness`, `/metrics`, `/schema*`), the web client's files (routes with
`opt={"exclude_from_limits": True}`: adapters/http/routes/web_app.py) and OPTIONS counts
towards the request limit (a CORS preflight is answered before any of this, by the CORS
middleware that wraps the app: adapters/http/middleware/cors.py; an OPTIONS that reaches the app
only lists a route's methods, which costs less than counting it); an
SSE endpoint also takes one of the caller's stream slots for as long as its response
streams, and an upload (a session attachment, a workspace file) also counts towards
the upload limit. Over a limit: 429
`RATE_LIMITED` with `Retry-After`. A refused request uses up nothing.

Where the counting happens is `RateLimits`' `counters`. The API counts in Postgres
(`adapters/postgres/limit_counters.py`), so the limits hold for a caller across every
API replica: requests and uploads in a sliding window estimated from two fixed
windows, streams as leases that the replica holding them refreshes (see there). When
Postgres cannot be reached the limits fail open: the request goes through, a warning is
logged, and the counters are left alone for `PAUSE` seconds (no request waits on them
meanwhile). `InMemoryCounters` count in this process alone (exact sliding windows), for
tests and a single process. The client address is the socket's peer, or the client
that a peer of `TOKENDANCE_TRUSTED_PROXIES` names (adapters/http/server.py).
"""

from __future__ import annotations

import asyncio
import logging
import math
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, ParamSpec, TypeVar

from litestar.enums import ScopeType
from litestar.middleware import ASGIMiddleware
from litestar.types import ASGIApp, Receive, Scope, Send

from adapters.http.errors import ApiError
from adapters.http.middleware.limit_counters import (
    Clock,
    Counters,
    CountersUnavailable,
    InMemoryCounters,
    Over,
    StreamAdmission,
    check_limit,
)
from application.bridge import SyncBridge

Limit = Literal["requests", "streams", "uploads"]
P = ParamSpec("P")
T = TypeVar("T")

EXEMPT = re.compile(r"^/(health|readiness|metrics)$|^/schema")
STREAMS = re.compile(r"^(POST /api/v1/chat/[^/]+/message|GET /api/v1/sessions/[^/]+/stream)$")
UPLOADS = re.compile(r"^POST /api/v1/(sessions/[^/]+/attachments|workspaces/[^/]+/files/?)$")
STREAM_RETRY_AFTER = 5  # seconds: nothing tells when a stream will end; ask again soon
PAUSE = 5.0  # seconds the counters are left alone after they could not be reached
UNCOUNTED = ""  # the slot of a stream admitted while the counters were unreachable

log = logging.getLogger(__name__)


class HeldStreams:
    """The streams this process holds, by caller: each its slot in the counters."""

    def __init__(self) -> None:
        self._held: dict[str, list[str]] = {}
        self._lock = threading.Lock()  # admitted and released on the bridge's threads

    def add(self, key: str, slot: str) -> None:
        with self._lock:
            self._held.setdefault(key, []).append(slot)

    def pop(self, key: str) -> str | None:
        """One of `key`'s slots (any: they count alike), no longer held."""
        with self._lock:
            slots = self._held.get(key)
            if not slots:
                return None
            slot = slots.pop()
            if not slots:
                del self._held[key]
            return slot

    def slots(self) -> list[str]:
        """The counted slots held now."""
        with self._lock:
            return [s for slots in self._held.values() for s in slots if s != UNCOUNTED]

    @property
    def total(self) -> int:
        """Slots held by all keys (the open SSE streams of this process)."""
        with self._lock:
            return sum(len(slots) for slots in self._held.values())


@dataclass(frozen=True)
class Refusal:
    """Why a request was refused, and when to try again."""

    limit: Limit
    retry_after: int

    def error(self) -> ApiError:
        detail = {
            "requests": "too many requests; slow down",
            "streams": "too many open streams; close one first",
            "uploads": "too many uploads; slow down",
        }[self.limit]
        return ApiError(429, detail, "RATE_LIMITED", **{"Retry-After": str(self.retry_after)})


class RateLimits:
    """The three limits, counted by `counters` (default: in this process alone), and
    what they have refused so far. With a `bridge`, the counters are called on its
    threads (they block); `enter` and `leave` are what the middleware awaits.
    (Counted on the loop's own connections instead, a message cost this process about
    a millisecond more CPU under load: docs/performance.md.)"""

    def __init__(
        self,
        *,
        requests_per_minute: int = 100,
        streams_per_user: int = 10,
        uploads_per_minute: int = 10,
        clock: Clock = time.monotonic,
        counters: Counters | None = None,
        bridge: SyncBridge | None = None,
    ) -> None:
        for limit in (requests_per_minute, streams_per_user, uploads_per_minute):
            check_limit(limit)
        self.requests_per_minute, self.uploads_per_minute = requests_per_minute, uploads_per_minute
        self.streams_per_user = streams_per_user
        self.counters = counters or InMemoryCounters(clock)
        self.bridge = bridge
        self.streams = HeldStreams()
        self.refused: dict[Limit, int] = {"requests": 0, "streams": 0, "uploads": 0}
        self._lock = threading.Lock()
        self._paused_until = 0.0
        self._refresher: asyncio.Task[None] | None = None

    def admit(self, key: str, *, upload: bool = False, stream: bool = False) -> Refusal | None:
        """Count the request, or say why not; an admitted stream (never an upload) holds
        a slot until `release_stream`. Nothing is counted for a refused request."""
        if stream:
            return self._admitted_stream(
                key,
                self._shared(
                    (UNCOUNTED, None), self.counters.admit_stream, key,
                    requests=self.requests_per_minute, streams=self.streams_per_user,
                ),
            )  # fmt: skip
        uploads = self.uploads_per_minute if upload else None
        return self._counted(
            self._shared(
                None, self.counters.hit, key, requests=self.requests_per_minute, uploads=uploads
            )
        )

    def release_stream(self, key: str) -> None:
        slot = self.streams.pop(key)
        if slot:
            self._shared(None, self.counters.close_stream, slot)

    async def enter(
        self, key: str, *, upload: bool = False, stream: bool = False
    ) -> Refusal | None:
        """`admit`, off the loop when the counters block."""
        refusal = await self._run(self.admit, key, upload=upload, stream=stream)
        if refusal is None and stream:
            self._keep_leases()
        return refusal

    async def leave(self, key: str) -> None:
        """`release_stream`; carried through even if the request is being cancelled."""
        await asyncio.shield(self._release(key))

    async def _release(self, key: str) -> None:
        slot = self.streams.pop(key)
        if slot:
            await self._run(self._shared, None, self.counters.close_stream, slot)

    def _admitted_stream(self, key: str, admission: StreamAdmission) -> Refusal | None:
        slot, over = admission
        if over is not None:
            return self._counted(over)
        if slot is None:
            return self._refuse(Refusal("streams", STREAM_RETRY_AFTER))
        self.streams.add(key, slot)
        return None

    def _counted(self, over: Over | None) -> Refusal | None:
        """No refusal, or the one for the full counter, retried in whole seconds."""
        if over is None:
            return None
        return self._refuse(Refusal(over.limit, max(1, math.ceil(over.retry_after))))

    def _refuse(self, refusal: Refusal) -> Refusal:
        with self._lock:
            self.refused[refusal.limit] += 1
        return refusal

    def _shared(self, default: T, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """`fn` of the counters; `default` while they cannot be reached (fail open)."""
        if self._paused():
            return default
        try:
            return fn(*args, **kwargs)
        except CountersUnavailable as e:
            self._pause(e)
            return default

    def _paused(self) -> bool:
        return time.monotonic() < self._paused_until

    def _pause(self, e: CountersUnavailable) -> None:
        self._paused_until = time.monotonic() + PAUSE
        log.warning("rate limits not counted for %.0f s (letting requests through): %s", PAUSE, e)

    async def _run(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        if self.bridge is None:
            return fn(*args, **kwargs)
        return await self.bridge(fn, *args, **kwargs)

    def _keep_leases(self) -> None:
        """Refresh this process's stream leases while it holds any (a task, on demand)."""
        lease = self.counters.lease
        if lease is None or (self._refresher is not None and not self._refresher.done()):
            return
        self._refresher = asyncio.get_running_loop().create_task(
            self._refresh_leases(lease / 3), name="stream leases"
        )

    async def _refresh_leases(self, every: float) -> None:
        while True:
            await asyncio.sleep(every)
            slots = self.streams.slots()
            if not slots:
                return  # the next stream admitted starts another
            await self._run(self._shared, None, self.counters.refresh, slots)


def caller_key(scope: Scope) -> str:
    """The authenticated user, else the client address."""
    principal = scope.get("user")
    user_id = getattr(principal, "user_id", None)
    if user_id is not None:
        return f"user:{user_id}"
    client = scope.get("client")
    return f"ip:{client[0] if client else 'unknown'}"


class RateLimitMiddleware(ASGIMiddleware):
    """Applies `RateLimits`; runs after authentication, so it knows the user."""

    scopes = (ScopeType.HTTP,)
    exclude_opt_key = "exclude_from_limits"  # static files: a page load is many of them

    def __init__(self, limits: RateLimits) -> None:
        self.limits = limits

    @staticmethod
    def should_bypass_for_scope(scope: Scope) -> bool:
        return scope.get("method") == "OPTIONS" or bool(EXEMPT.search(scope["path"]))

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        route = f"{scope.get('method', '')} {scope['path']}"
        stream = STREAMS.match(route) is not None
        key = caller_key(scope)
        upload = UPLOADS.match(route) is not None
        refusal = await self.limits.enter(key, upload=upload, stream=stream)
        if refusal is not None:
            raise refusal.error()
        if not stream:
            await next_app(scope, receive, send)
            return
        try:  # a streaming response returns when the stream ends or the client goes away
            await next_app(scope, receive, send)
        finally:
            await self.limits.leave(key)
