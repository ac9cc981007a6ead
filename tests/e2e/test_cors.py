"""CORS for browser clients, against a real `tokendance serve` with
`TOKENDANCE_CORS_ORIGINS`: an allowed origin's preflights are answered (with no token,
counting no request), another origin's carry nothing a browser would accept, and what a
client must read of an answer (`Retry-After` on a 429) is exposed."""

from __future__ import annotations

import httpx
import pytest

from tests.e2e.client import Server, assert_error, sign_up
from tests.e2e.conftest import StartServer

pytestmark = [pytest.mark.e2e]

ALLOWED = "http://app.example.test:5173"
OTHER = "http://evil.example.test"
ASKED_HEADERS = "authorization, content-type, idempotency-key, last-event-id"


def preflight(http: httpx.Client, path: str, origin: str, method: str = "POST") -> httpx.Response:
    return http.options(
        path,
        headers={
            "Origin": origin,
            "Access-Control-Request-Method": method,
            "Access-Control-Request-Headers": ASKED_HEADERS,
        },
    )


def cors_headers(response: httpx.Response) -> dict[str, str]:
    return {k: v for k, v in response.headers.items() if k.startswith("access-control-")}


def listed(value: str) -> set[str]:
    return {item.strip().lower() for item in value.split(",")}


def serve(start_server: StartServer, **env: str) -> Server:
    return start_server(None, extra_env={"TOKENDANCE_CORS_ORIGINS": ALLOWED, **env})


def test_a_preflight_from_an_allowed_origin_is_answered_without_a_token_or_a_count(
    start_server: StartServer,
) -> None:
    server = serve(start_server, TOKENDANCE_RATE_LIMIT_PER_MINUTE="5")
    with server.client() as anonymous:
        answers = [preflight(anonymous, "/api/v1/sessions", ALLOWED) for _ in range(12)]
        assert [a.status_code for a in answers] == [204] * 12, answers[-1].text
        headers = answers[-1].headers
        assert headers["access-control-allow-origin"] == ALLOWED
        assert listed(headers["access-control-allow-headers"]) >= listed(ASKED_HEADERS)
        assert listed(headers["access-control-allow-methods"]) >= {
            "get", "post", "patch", "put", "delete", "options",
        }  # fmt: skip
        assert "access-control-allow-credentials" not in headers
        stream = preflight(anonymous, "/api/v1/sessions/x/stream", ALLOWED, method="GET")
        assert stream.status_code == 204  # an EventSource-like GET with Last-Event-ID
        # Twelve preflights used up none of the 5 requests a minute of this address.
        for _ in range(5):
            login = anonymous.post(
                "/api/v1/auth/login", json={"email": "nobody@example.com", "password": "x"}
            )
            assert_error(login, 401, "INVALID_CREDENTIALS")
        over = anonymous.post(
            "/api/v1/auth/login", json={"email": "no@example.com", "password": "x"}
        )
        assert_error(over, 429, "RATE_LIMITED")  # the limit is live: preflights are not counted


def test_a_preflight_from_another_origin_carries_no_allow_headers(
    start_server: StartServer,
) -> None:
    server = serve(start_server)
    with server.client() as anonymous:
        for origin in (OTHER, "http://app.example.test:5174", "https://app.example.test:5173"):
            refused = preflight(anonymous, "/api/v1/sessions", origin)
            assert refused.status_code == 400, refused.text
            assert cors_headers(refused) == {}
        asks_more = anonymous.options(
            "/api/v1/sessions",
            headers={
                "Origin": ALLOWED,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "authorization, x-not-allowed",
            },
        )
        assert asks_more.status_code == 400
        assert "access-control-allow-origin" not in asks_more.headers


def test_answers_name_only_the_allowed_origin_and_expose_retry_after(
    start_server: StartServer,
) -> None:
    server = serve(start_server, TOKENDANCE_RATE_LIMIT_PER_MINUTE="6")
    with server.client() as anonymous:
        user = sign_up(anonymous, "cors@example.com")  # 2 of this address's 6
    with server.client(str(user["access_token"])) as http:
        mine = http.get("/api/v1/workspaces", headers={"Origin": ALLOWED})
        assert mine.status_code == 200
        assert mine.headers["access-control-allow-origin"] == ALLOWED
        assert "retry-after" in listed(mine.headers["access-control-expose-headers"])

        theirs = http.get("/api/v1/workspaces", headers={"Origin": OTHER})
        assert theirs.status_code == 200  # served, but no browser lets the page read it
        assert "access-control-allow-origin" not in theirs.headers

        no_origin = http.get("/api/v1/workspaces")
        assert "access-control-allow-origin" not in no_origin.headers

        unauthenticated = httpx.get(f"{server.url}/api/v1/workspaces", headers={"Origin": ALLOWED})
        assert_error(unauthenticated, 401, "UNAUTHORIZED")
        assert unauthenticated.headers["access-control-allow-origin"] == ALLOWED

        answers = [http.get("/api/v1/workspaces", headers={"Origin": ALLOWED}) for _ in range(6)]
        refused = answers[-1]
        assert_error(refused, 429, "RATE_LIMITED")
        assert refused.headers["access-control-allow-origin"] == ALLOWED
        assert "retry-after" in listed(refused.headers["access-control-expose-headers"])
        assert 1 <= int(refused.headers["retry-after"]) <= 60
