"""Failed logins, limited per account and per client address, so passwords cannot be
guessed at speed (`TOKENDANCE_LOGIN_ATTEMPTS` failures in 15 minutes, default 10).

A login takes an attempt under its account's key (the normalized email, whether or not
it has an account: an unknown email is limited exactly like a known one, so a 429 tells
nothing about which emails exist) and under its client address's key, before its
password is checked; a login that did not fail with INVALID_CREDENTIALS gives it back.
Once either key has its limit of failures in the window, every login of that account
(from any address) and every login from that address (for any account) answers 429
`RATE_LIMITED` with `Retry-After` (seconds until the oldest counted failure is 15
minutes old), even with the right password, which is not checked: a lock that the right
password passed would go on answering a guesser's every guess, and tell it the right one.
A successful login gives back its own attempt only; the failures of other addresses on
the account keep counting.

The failures are counted by `failures`: in Postgres for the API, shared by its replicas
(adapters/postgres/login_failures.py). When Postgres cannot be reached the limit fails
open like the rate limits: the login goes on, a warning is logged, and the counters are
left alone for `PAUSE` seconds. The client address is the socket's peer, or the client
that a peer of `TOKENDANCE_TRUSTED_PROXIES` names in `X-Forwarded-For` (uvicorn resolves
it: adapters/http/server.py); from any other peer that header is ignored.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import ParamSpec, Protocol, TypeVar

from litestar.datastructures import Address

from adapters.http.errors import ApiError
from adapters.http.middleware.limit_counters import (
    Clock,
    CountersUnavailable,
    InMemoryLoginFailures,
    Locked,
    LoginFailures,
    check_limit,
)
from application.bridge import SyncBridge
from domain.account_errors import InvalidCredentials, WrongPassword
from domain.accounts import normalize_email
from domain.errors import InvalidCommand

P = ParamSpec("P")
T = TypeVar("T")

PAUSE = 5.0  # seconds the counters are left alone after they could not be reached

log = logging.getLogger(__name__)


class LoginLimits:
    """At most `attempts` failed logins per account and per address in the window of
    `failures` (default: counted in this process alone); `refused` counts the 429s."""

    def __init__(
        self,
        *,
        attempts: int = 10,
        failures: LoginFailures | None = None,
        clock: Clock = time.monotonic,
        bridge: SyncBridge | None = None,
    ) -> None:
        check_limit(attempts)
        self.attempts = attempts
        self.failures = failures or InMemoryLoginFailures(clock)
        self.bridge = bridge
        self.refused = 0
        self._paused_until = 0.0

    @asynccontextmanager
    async def attempt(self, email: str, address: str) -> AsyncIterator[None]:
        """Around one login (or a password change): 429 at once when its account or
        address is locked; the attempt stays counted only if the password was wrong
        (`InvalidCredentials`, `WrongPassword`)."""
        keys = (f"account:{account_of(email)}", f"address:{address}")
        taken = await self._run(self._reserve, keys)
        if isinstance(taken, Locked):
            self.refused += 1
            retry_after = str(max(1, math.ceil(taken.retry_after)))
            detail = "too many failed logins; try again later"
            raise ApiError(429, detail, "RATE_LIMITED", **{"Retry-After": retry_after})
        failed = False
        try:
            yield
        except (InvalidCredentials, WrongPassword):
            failed = True
            raise
        finally:
            if taken is not None and not failed:  # carried through even if cancelled
                await asyncio.shield(self._run(self._release, taken, keys))

    def _reserve(self, keys: Sequence[str]) -> str | Locked | None:
        """The attempt's id, or when a slot frees; None while the counters are away."""
        if time.monotonic() < self._paused_until:
            return None
        try:
            return self.failures.reserve(keys, self.attempts)
        except CountersUnavailable as e:
            self._paused_until = time.monotonic() + PAUSE
            log.warning("failed logins not counted for %.0f s (letting logins in): %s", PAUSE, e)
            return None

    def _release(self, attempt: str, keys: Sequence[str]) -> None:
        try:
            self.failures.release(attempt, keys)
        except CountersUnavailable as e:  # it then counts as a failure until it ages out
            log.warning("a login's attempt was not given back: %s", e)

    async def _run(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        if self.bridge is None:
            return fn(*args, **kwargs)
        return await self.bridge(fn, *args, **kwargs)


def account_of(email: str) -> str:
    """The account an email names, as login finds it (a malformed one as it was typed)."""
    try:
        return normalize_email(email)
    except InvalidCommand:
        return email.strip().lower()


class Connected(Protocol):
    """A request, as far as its peer goes."""

    @property
    def client(self) -> Address | None: ...


def client_address(request: Connected) -> str:
    return request.client.host if request.client else "unknown"
