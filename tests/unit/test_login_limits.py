"""Failed logins per account and per client address, counted in this process
(`InMemoryLoginFailures`) with a clock moved by the test: never a 15-minute sleep."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import pytest

from adapters.http.errors import ApiError
from adapters.http.middleware.limit_counters import (
    CountersUnavailable,
    InMemoryLoginFailures,
    Locked,
)
from adapters.http.middleware.login_limits import LoginLimits
from domain.account_errors import InvalidCredentials
from domain.errors import Conflict

WINDOW = 15 * 60


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def limits(clock: Clock) -> LoginLimits:
    return LoginLimits(attempts=10, clock=clock)


async def fail(limits: LoginLimits, email: str, address: str) -> None:
    """A login with a wrong password."""
    with pytest.raises(InvalidCredentials):
        async with limits.attempt(email, address):
            raise InvalidCredentials()


async def succeed(limits: LoginLimits, email: str, address: str) -> None:
    async with limits.attempt(email, address):
        pass


async def refused(limits: LoginLimits, email: str, address: str) -> int:
    """The login is refused before its password is checked: its Retry-After."""
    checked = False
    with pytest.raises(ApiError) as raised:
        async with limits.attempt(email, address):
            checked = True
    assert not checked, "a locked login's password must not be checked"
    assert raised.value.status_code == 429 and raised.value.code == "RATE_LIMITED"
    assert raised.value.headers is not None
    return int(raised.value.headers["Retry-After"])


async def test_the_eleventh_failure_of_an_account_is_refused_from_any_address(
    limits: LoginLimits, clock: Clock
) -> None:
    for n in range(10):
        await fail(limits, "ada@example.com", f"10.0.0.{n}")  # never the same address twice
        clock.now += 10
    assert await refused(limits, " ADA@Example.com ", "192.0.2.7") == WINDOW - 100
    assert await refused(limits, "ada@example.com", "10.0.0.1") == WINDOW - 100
    await succeed(limits, "grace@example.com", "192.0.2.7")  # that address is not locked
    clock.now += WINDOW - 100  # the first failure leaves the window: one slot frees
    await fail(limits, "ada@example.com", "192.0.2.7")
    assert await refused(limits, "ada@example.com", "192.0.2.8") == 10


async def test_an_address_with_ten_failures_is_refused_for_any_account(
    limits: LoginLimits, clock: Clock
) -> None:
    for n in range(10):
        await fail(limits, f"guess{n}@example.com", "198.51.100.1")
    assert await refused(limits, "ada@example.com", "198.51.100.1") == WINDOW
    await succeed(limits, "ada@example.com", "198.51.100.2")  # nor is that account
    clock.now += WINDOW
    await succeed(limits, "ada@example.com", "198.51.100.1")


async def test_successful_logins_count_nothing_and_reset_no_other_address(
    limits: LoginLimits,
) -> None:
    for _ in range(30):
        await succeed(limits, "ada@example.com", "10.0.0.1")
    for n in range(9):
        await fail(limits, "ada@example.com", f"10.0.1.{n}")
    await succeed(limits, "ada@example.com", "10.0.2.1")  # the owner logs in meanwhile
    await fail(limits, "ada@example.com", "10.0.1.99")  # the tenth failure still counts
    await refused(limits, "ada@example.com", "10.0.2.1")  # the owner too, until it frees


async def test_a_login_that_fails_otherwise_is_not_a_failed_guess(limits: LoginLimits) -> None:
    for _ in range(12):
        with pytest.raises(Conflict):
            async with limits.attempt("ada@example.com", "10.0.0.1"):
                raise Conflict("the login changed meanwhile")
    await succeed(limits, "ada@example.com", "10.0.0.1")


async def test_an_unknown_email_is_limited_like_a_known_one(limits: LoginLimits) -> None:
    for n in range(10):
        await fail(limits, "nobody@example.com", f"10.0.0.{n}")
    await refused(limits, "nobody@example.com", "10.0.9.9")
    for n in range(10):  # a malformed email is an account key as typed
        await fail(limits, "not an email", f"10.0.3.{n}")
    await refused(limits, "NOT AN EMAIL", "10.0.9.9")


class Unreachable:
    """Failures stored where nothing answers (Postgres down)."""

    def __init__(self) -> None:
        self.calls = 0

    def reserve(self, keys: Sequence[str], limit: int) -> str | Locked:
        self.calls += 1
        raise CountersUnavailable("connection refused")

    def release(self, attempt: str, keys: Sequence[str]) -> None:
        raise CountersUnavailable("connection refused")


async def test_logins_go_on_when_the_failures_cannot_be_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = Unreachable()
    limits = LoginLimits(attempts=1, failures=store)
    with caplog.at_level(logging.WARNING, "adapters.http.middleware.login_limits"):
        for _ in range(5):
            await fail(limits, "ada@example.com", "10.0.0.1")
            await succeed(limits, "ada@example.com", "10.0.0.1")
    assert store.calls == 1  # then left alone for a while: no login waits on them
    assert "failed logins not counted" in caplog.text


def test_in_memory_failures_say_when_the_fullest_key_frees(clock: Clock) -> None:
    failures = InMemoryLoginFailures(clock)
    first = failures.reserve(["account:a", "address:x"], 2)
    clock.now += 60
    second = failures.reserve(["account:a", "address:y"], 2)
    assert isinstance(first, str) and isinstance(second, str)
    assert isinstance(failures.reserve(["account:b", "address:w"], 2), str)
    assert failures.reserve(["account:a", "address:z"], 2) == Locked(WINDOW - 60.0)
    failures.release(second, ["account:a", "address:y"])
    assert isinstance(failures.reserve(["account:a", "address:z"], 2), str)
