"""The rate limiter: sliding windows, stream slots, and its middleware on a small app."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from uuid import UUID, uuid4

from litestar import Litestar, get
from litestar.response import ServerSentEvent
from litestar.testing import TestClient
from litestar.types import ASGIApp, Receive, Scope, Send

from adapters.http.errors import EXCEPTION_HANDLERS
from adapters.http.middleware.limit_counters import SlidingWindow
from adapters.http.middleware.limits import RateLimitMiddleware, RateLimits


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_window_admits_its_limit_then_says_when_to_retry() -> None:
    clock = Clock()
    window = SlidingWindow(3, 60.0, clock=clock)
    for _ in range(3):
        assert window.retry_after("a") == 0
        window.hit("a")
        clock.now += 10
    assert window.retry_after("a") == 30.0  # the first hit leaves the window at +60
    assert window.retry_after("b") == 0
    clock.now += 30
    assert window.retry_after("a") == 0


def test_hits_leave_the_window_one_at_a_time() -> None:
    clock = Clock()
    window = SlidingWindow(2, 60.0, clock=clock)
    window.hit("a")
    clock.now += 59
    window.hit("a")
    clock.now += 2  # the first hit is gone, the second is not
    assert window.retry_after("a") == 0
    window.hit("a")
    assert window.retry_after("a") == 58.0


def test_a_refused_request_uses_up_nothing() -> None:
    clock = Clock()
    limits = RateLimits(requests_per_minute=2, uploads_per_minute=1, clock=clock)
    assert limits.admit("user:a") is None
    assert limits.admit("user:a", upload=True) is None
    upload = limits.admit("user:a", upload=True)
    assert upload is not None and upload.limit == "uploads"
    for _ in range(5):
        refusal = limits.admit("user:a")
        assert refusal is not None and refusal.limit == "requests"
        assert refusal.retry_after == 60
    clock.now += 60
    assert limits.admit("user:a") is None  # the refusals did not push the window on
    assert limits.refused == {"requests": 5, "streams": 0, "uploads": 1}


def test_an_upload_refused_does_not_count_as_a_request() -> None:
    limits = RateLimits(requests_per_minute=2, uploads_per_minute=1, clock=Clock())
    assert limits.admit("user:a", upload=True) is None
    assert limits.admit("user:a", upload=True) is not None
    assert limits.admit("user:a") is None  # the refused upload left this request room


def test_stream_slots_are_per_caller_and_come_back_on_release() -> None:
    limits = RateLimits(streams_per_user=2, clock=Clock())
    assert limits.admit("user:a", stream=True) is None
    assert limits.admit("user:a", stream=True) is None
    refusal = limits.admit("user:a", stream=True)
    assert refusal is not None and refusal.limit == "streams" and refusal.retry_after > 0
    assert limits.admit("user:b", stream=True) is None
    assert limits.streams.total == 3
    limits.release_stream("user:a")
    assert limits.admit("user:a", stream=True) is None
    assert limits.streams.total == 3


def test_a_refusal_is_a_429_with_retry_after_and_the_error_code() -> None:
    limits = RateLimits(requests_per_minute=1, clock=Clock())
    limits.admit("ip:1.2.3.4")
    refusal = limits.admit("ip:1.2.3.4")
    assert refusal is not None
    error = refusal.error()
    assert (error.status_code, error.code) == (429, "RATE_LIMITED")
    assert error.headers == {"Retry-After": "60"}


# -- the middleware on a small app, with a stand-in for the bearer-token middleware --


@dataclass(frozen=True)
class User:
    user_id: UUID


def as_user(app: ASGIApp) -> ASGIApp:
    async def middleware(scope: Scope, receive: Receive, send: Send) -> None:
        user = dict(scope["headers"]).get(b"x-user")
        if user:
            scope["user"] = User(UUID(user.decode()))
        await app(scope, receive, send)

    return middleware


@get("/api/v1/things")
async def things() -> dict[str, str]:
    return {"ok": "yes"}


@get("/health")
async def health() -> dict[str, str]:
    return {"status": "ok"}


HELD: list[int] = []  # stream slots in use, as seen from inside a streaming response


def streaming(limits: RateLimits, *, fail: bool) -> AsyncIterator[str]:
    async def events() -> AsyncIterator[str]:
        HELD.append(limits.streams.total)
        yield "one"
        if fail:
            raise RuntimeError("the feed failed")

    return events()


def client(limits: RateLimits) -> TestClient[Litestar]:
    @get("/api/v1/sessions/good/stream")
    async def good() -> ServerSentEvent:
        return ServerSentEvent(streaming(limits, fail=False))

    @get("/api/v1/sessions/broken/stream")
    async def broken() -> ServerSentEvent:
        return ServerSentEvent(streaming(limits, fail=True))

    app = Litestar(
        [things, health, good, broken],
        middleware=[as_user, RateLimitMiddleware(limits)],
        exception_handlers=EXCEPTION_HANDLERS,  # type: ignore[arg-type]
    )
    return TestClient(app, raise_server_exceptions=False)  # the broken stream fails


def test_the_middleware_limits_each_user_and_exempts_operations() -> None:
    alice, bob = str(uuid4()), str(uuid4())
    with client(RateLimits(requests_per_minute=2)) as http:
        for _ in range(2):
            assert http.get("/api/v1/things", headers={"x-user": alice}).status_code == 200
        refused = http.get("/api/v1/things", headers={"x-user": alice})
        assert refused.status_code == 429
        assert refused.json()["error_code"] == "RATE_LIMITED"
        assert set(refused.json()) == {"detail", "error_code", "timestamp"}
        assert 1 <= int(refused.headers["retry-after"]) <= 60
        assert http.get("/api/v1/things", headers={"x-user": bob}).status_code == 200
        assert http.get("/api/v1/things").status_code == 200  # by address: a third caller
        for _ in range(5):
            assert http.get("/health", headers={"x-user": alice}).status_code == 200


def test_a_stream_holds_a_slot_until_it_ends_or_fails() -> None:
    limits = RateLimits(streams_per_user=1)
    alice = {"x-user": str(uuid4())}
    HELD.clear()
    with client(limits) as http:
        for session in ("good", "broken", "good"):
            response = http.get(f"/api/v1/sessions/{session}/stream", headers=alice)
            assert response.status_code == (500 if session == "broken" else 200)
            assert limits.streams.total == 0
    assert HELD == [1, 1, 1]
