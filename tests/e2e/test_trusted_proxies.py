"""Whose address the failed-login limit counts: the socket's peer, unless that peer is
one of `TOKENDANCE_TRUSTED_PROXIES` (then the client its `X-Forwarded-For` names)."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.e2e.conftest import StartServer

pytestmark = [pytest.mark.e2e]

ATTEMPTS = 3


def failed_login(http: httpx.Client, forwarded_for: str) -> int:
    """A wrong password for an email of its own (so only the address's budget is shared)."""
    answer = http.post(
        "/api/v1/auth/login",
        json={"email": f"{uuid.uuid4().hex[:12]}@example.com", "password": "wrong"},
        headers={"X-Forwarded-For": forwarded_for},
    )
    return answer.status_code


def test_by_default_a_forwarded_for_header_does_not_escape_the_login_limit(
    start_server: StartServer,
) -> None:
    server = start_server(extra_env={"TOKENDANCE_LOGIN_ATTEMPTS": str(ATTEMPTS)})
    with server.client() as http:
        # Each guess claims another client: from a peer nobody trusts, all are 127.0.0.1's.
        answers = [failed_login(http, f"198.51.100.{n}") for n in range(ATTEMPTS + 2)]
    assert answers == [401] * ATTEMPTS + [429, 429]


def test_from_a_trusted_proxy_each_forwarded_client_has_its_own_budget(
    start_server: StartServer,
) -> None:
    server = start_server(
        extra_env={
            "TOKENDANCE_LOGIN_ATTEMPTS": str(ATTEMPTS),
            "TOKENDANCE_TRUSTED_PROXIES": "127.0.0.1",
        }
    )
    with server.client() as http:
        first = [failed_login(http, "198.51.100.1") for _ in range(ATTEMPTS + 1)]
        assert first == [401] * ATTEMPTS + [429]
        # Another client behind the same proxy: its budget is untouched.
        assert [failed_login(http, "198.51.100.2") for _ in range(ATTEMPTS)] == [401] * ATTEMPTS
        assert failed_login(http, "198.51.100.2") == 429
        # A client's own claim is kept as the proxy appends it: the proxy's view wins.
        assert failed_login(http, "203.0.113.9, 198.51.100.1") == 429
