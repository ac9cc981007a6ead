"""Rate limits per caller: requests per minute, open SSE streams, uploads per minute.

The caller is the authenticated user (`request.user.user_id`); before login (register,
login, refresh) it is the client address. Every request but the operational ones
(`/health`, `/readiness`, `/metrics`, `/schema*`) counts towards the request limit; an
SSE endpoint also takes one of the caller's stream slots for as long as its response
streams, and an upload (a session attachment, a workspace file) also counts towards
the upload limit. Over a limit: 429
`RATE_LIMITED` with `Retry-After`. A refused request uses up nothing.

The counters live in memory, per process: with several API processes behind a
balancer each enforces the limits on its own, so a caller may get up to N times the
limit across N processes. The client address is the socket's peer; behind a proxy,
run uvicorn with `--proxy-headers` from trusted hosts only.
"""

from __future__ import annotations

import math
import re
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from litestar.enums import ScopeType
from litestar.middleware import ASGIMiddleware
from litestar.types import ASGIApp, Receive, Scope, Send

from adapters.http.errors import ApiError

Clock = Callable[[], float]
Limit = Literal["requests", "streams", "uploads"]

EXEMPT = re.compile(r"^/(health|readiness|metrics)$|^/schema")
STREAMS = re.compile(r"^(POST /api/v1/chat/[^/]+/message|GET /api/v1/sessions/[^/]+/stream)$")
UPLOADS = re.compile(r"^POST /api/v1/(sessions/[^/]+/attachments|workspaces/[^/]+/files/?)$")
STREAM_RETRY_AFTER = 5  # seconds: nothing tells when a stream will end; ask again soon
WINDOW = 60.0


class SlidingWindow:
    """At most `limit` hits per key in any `window` seconds (a log of hit times per key)."""

    def __init__(self, limit: int, window: float = WINDOW, *, clock: Clock = time.monotonic):
        _check_limit(limit)
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
        _check_limit(limit)
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
    """The three limits of one API process, and what they have refused so far."""

    def __init__(
        self,
        *,
        requests_per_minute: int = 100,
        streams_per_user: int = 10,
        uploads_per_minute: int = 10,
        clock: Clock = time.monotonic,
    ) -> None:
        self.requests = SlidingWindow(requests_per_minute, clock=clock)
        self.uploads = SlidingWindow(uploads_per_minute, clock=clock)
        self.streams = ConcurrencyLimit(streams_per_user)
        self.refused: dict[Limit, int] = {"requests": 0, "streams": 0, "uploads": 0}

    def admit(self, key: str, *, upload: bool = False, stream: bool = False) -> Refusal | None:
        """Count the request, or say why not; an admitted stream holds a slot until
        `release_stream`. Nothing is counted for a refused request."""
        refusal = self._check(key, upload=upload)
        if refusal is None and stream and not self.streams.acquire(key):
            refusal = Refusal("streams", STREAM_RETRY_AFTER)
        if refusal is not None:
            self.refused[refusal.limit] += 1
            return refusal
        self.requests.hit(key)
        if upload:
            self.uploads.hit(key)
        return None

    def release_stream(self, key: str) -> None:
        self.streams.release(key)

    def _check(self, key: str, *, upload: bool) -> Refusal | None:
        windows: list[tuple[Limit, SlidingWindow]] = [("requests", self.requests)]
        if upload:
            windows.insert(0, ("uploads", self.uploads))
        for limit, window in windows:
            wait = window.retry_after(key)
            if wait > 0:
                return Refusal(limit, max(1, math.ceil(wait)))
        return None


def _check_limit(limit: int) -> None:
    if limit < 1:
        raise ValueError(f"a rate limit must be at least 1, not {limit}")


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

    def __init__(self, limits: RateLimits) -> None:
        self.limits = limits

    @staticmethod
    def should_bypass_for_scope(scope: Scope) -> bool:
        return bool(EXEMPT.search(scope["path"]))

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        route = f"{scope.get('method', '')} {scope['path']}"
        stream = STREAMS.match(route) is not None
        key = caller_key(scope)
        refusal = self.limits.admit(key, upload=UPLOADS.match(route) is not None, stream=stream)
        if refusal is not None:
            raise refusal.error()
        if not stream:
            await next_app(scope, receive, send)
            return
        try:  # a streaming response returns when the stream ends or the client goes away
            await next_app(scope, receive, send)
        finally:
            self.limits.release_stream(key)
