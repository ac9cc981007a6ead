"""Tokens are checked every time: missing, malformed, tampered, expired, revoked, of the
wrong kind; refresh rotation with reuse detection; one answer for wrong credentials."""

from __future__ import annotations

import base64
import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import jwt
import pytest

from application.tokens import TokenCodec
from tests.e2e.client import (
    E2E_JWT_SECRET,
    Server,
    assert_error,
    read_sse,
    sign_up,
)
from tests.e2e.conftest import StartServer, module_server

pytestmark = [pytest.mark.e2e]

SECRET = "e2e-secret-" + "x" * 32  # what tests/e2e/client.py gives the server


@pytest.fixture(scope="module")
def server(servers: tuple[str, str], data_root: Path, template_database: str) -> Iterator[Server]:
    """One server for the module's tests that need no settings of their own: each signs
    up users of its own on it."""
    with module_server(servers, data_root, template_database) as started:
        yield started


def as_user(server: Server, token: object) -> httpx.Client:
    return server.client(str(token))


def flip_signature(token: str) -> str:
    """The token with one character of its signature changed (one from the middle, so
    the change is in real signature bits, not in base64 padding bits)."""
    head, payload, signature = token.split(".")
    i = len(signature) // 2
    swapped = "A" if signature[i] != "A" else "B"
    return ".".join([head, payload, signature[:i] + swapped + signature[i + 1 :]])


def with_claims(token: str, **changes: object) -> str:
    """The token with changed claims and its old signature (a forgery)."""
    head, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    claims.update(changes)
    forged = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    return ".".join([head, forged, signature])


def test_bad_tokens_get_401_with_their_codes(server: Server) -> None:
    anon = server.client()
    a = sign_up(anon, "tok@example.com")
    other = sign_up(anon, "other@example.com")
    access, refresh = str(a["access_token"]), str(a["refresh_token"])
    url = "/api/v1/workspaces/"
    assert as_user(server, access).get(url).status_code == 200

    def call(authorization: str | None) -> httpx.Response:
        headers = {"Authorization": authorization} if authorization is not None else {}
        return anon.get(url, headers=headers)

    assert_error(call(None), 401, "UNAUTHORIZED")
    assert_error(call(""), 401, "UNAUTHORIZED")
    assert_error(call("Bearer"), 401, "UNAUTHORIZED")
    assert_error(call(f"Basic {access}"), 401, "UNAUTHORIZED")
    assert_error(call(access), 401, "UNAUTHORIZED")  # no scheme
    assert_error(call("Bearer not-a-jwt"), 401, "INVALID_TOKEN")
    assert_error(call("Bearer a.b.c"), 401, "INVALID_TOKEN")
    assert_error(call(f"Bearer {flip_signature(access)}"), 401, "INVALID_TOKEN")
    assert_error(call(f"Bearer {access}x"), 401, "INVALID_TOKEN")
    # Claims changed under the old signature: someone else's user id, a later expiry.
    forged_user = with_claims(access, sub=str(other["user_id"]))
    assert_error(call(f"Bearer {forged_user}"), 401, "INVALID_TOKEN")
    assert_error(call(f"Bearer {with_claims(access, exp=4_000_000_000)}"), 401, "INVALID_TOKEN")
    # Signed, but not by this server, or not signed at all ("alg": "none").
    claims = jwt.decode(access, options={"verify_signature": False})
    foreign = jwt.encode(claims, "another-secret-" + "y" * 32, algorithm="HS256")
    assert_error(call(f"Bearer {foreign}"), 401, "INVALID_TOKEN")
    unsigned = jwt.encode(claims, None, algorithm="none")  # type: ignore[arg-type]
    assert_error(call(f"Bearer {unsigned}"), 401, "INVALID_TOKEN")
    # Properly signed, but for a login that does not exist.
    ghost = jwt.encode({**claims, "fam": str(uuid.uuid4())}, SECRET, algorithm="HS256")
    assert_error(call(f"Bearer {ghost}"), 401, "INVALID_TOKEN")
    # The wrong kind of token, both ways round.
    assert_error(call(f"Bearer {refresh}"), 401, "INVALID_TOKEN")
    wrong_kind = anon.post("/api/v1/auth/refresh", json={"refresh_token": access})
    assert_error(wrong_kind, 401, "INVALID_TOKEN")
    # The query-string token is for the SSE stream only.
    assert_error(anon.get(url, params={"access_token": access}), 401, "UNAUTHORIZED")

    # Nothing above spoiled the real token.
    assert as_user(server, access).get(url).status_code == 200


def test_login_and_refresh_answer_200_ok(server: Server) -> None:
    """A login or a refresh creates no resource: 200 OK with the token body (RFC 6749 5.1).

    (Litestar's default for a POST is 201 Created; these handlers must say 200.)
    """
    anon = server.client()
    a = sign_up(anon, "status@example.com")
    login = anon.post(
        "/api/v1/auth/login",
        json={"email": "status@example.com", "password": "correct horse battery"},
    )
    refreshed = anon.post("/api/v1/auth/refresh", json={"refresh_token": a["refresh_token"]})
    assert login.is_success and refreshed.is_success
    assert (login.status_code, refreshed.status_code) == (200, 200)


def expired_twin(token: str, *, ttl: int) -> str:
    """The same login's access token as the server would have issued `ttl` + 1 seconds
    ago (signed with the e2e servers' secret), so expiry needs no sleeping; expiry
    against the service's clock is unit-tested with an injected clock (test_accounts)."""
    codec = TokenCodec(E2E_JWT_SECRET, access_ttl=ttl, refresh_ttl=ttl, clock=time.time)
    claims = codec.decode(token, typ="access")
    then = time.time() - ttl - 1
    past = TokenCodec(E2E_JWT_SECRET, access_ttl=ttl, refresh_ttl=ttl, clock=lambda: then)
    return past.pair(claims.user_id, claims.family_id, "unused").access_token


def test_an_expired_access_token_is_refused_and_the_refresh_token_still_works(
    start_server: StartServer,
) -> None:
    server = start_server(None, extra_env={"TOKENDANCE_ACCESS_TTL": "60"})
    anon = server.client()
    a = sign_up(anon, "expiry@example.com")
    assert a["expires_in"] == 60
    fresh = as_user(server, a["access_token"]).get("/api/v1/workspaces/")
    assert fresh.status_code == 200, fresh.text
    expired = as_user(server, expired_twin(str(a["access_token"]), ttl=60))
    assert_error(expired.get("/api/v1/workspaces/"), 401, "TOKEN_EXPIRED")
    # An expired token may still end its login; the refresh token is good for 30 days.
    refreshed = anon.post("/api/v1/auth/refresh", json={"refresh_token": a["refresh_token"]})
    assert refreshed.is_success, refreshed.text
    assert refreshed.json()["expires_in"] == 60
    again = as_user(server, expired_twin(refreshed.json()["access_token"], ttl=60))
    assert_error(again.get("/api/v1/workspaces/"), 401, "TOKEN_EXPIRED")


def test_logout_revokes_the_login_and_only_that_one(server: Server) -> None:
    anon = server.client()
    a = sign_up(anon, "logout@example.com")
    second = anon.post(
        "/api/v1/auth/login",
        json={"email": "logout@example.com", "password": "correct horse battery"},
    )
    assert second.is_success
    me, other_login = (
        as_user(server, a["access_token"]),
        as_user(server, second.json()["access_token"]),
    )
    assert me.get("/api/v1/workspaces/").status_code == 200

    out = me.post("/api/v1/auth/logout")
    assert out.status_code == 204, out.text
    assert_error(me.get("/api/v1/workspaces/"), 401, "TOKEN_REVOKED")
    assert_error(me.post("/api/v1/auth/logout"), 401, "TOKEN_REVOKED")
    reuse = anon.post("/api/v1/auth/refresh", json={"refresh_token": a["refresh_token"]})
    assert_error(reuse, 401)
    # Also through the SSE stream's query token.
    sid = other_login.post(
        "/api/v1/sessions/", json={"workspace_id": str(a["workspace_id"])}
    ).json()["id"]
    revoked_stream = read_sse(
        anon, "GET", f"/api/v1/sessions/{sid}/stream",
        params={"access_token": str(a["access_token"])}, timeout=5,
    )  # fmt: skip
    assert revoked_stream.status == 401
    assert json.loads(revoked_stream.body)["error_code"] == "TOKEN_REVOKED"

    # The user's other login is untouched.
    assert other_login.get("/api/v1/workspaces/").status_code == 200


def test_refresh_rotates_and_a_reused_refresh_token_revokes_the_whole_login(
    server: Server,
) -> None:
    anon = server.client()
    first = sign_up(anon, "rotate@example.com")

    def refresh(token: object) -> httpx.Response:
        return anon.post("/api/v1/auth/refresh", json={"refresh_token": str(token)})

    second = refresh(first["refresh_token"])
    assert second.is_success, second.text
    pair2 = second.json()
    assert set(pair2) == {"access_token", "token_type", "expires_in", "refresh_token"}
    assert pair2["token_type"] == "bearer"
    assert pair2["refresh_token"] != first["refresh_token"]
    assert pair2["access_token"] != first["access_token"]
    assert as_user(server, pair2["access_token"]).get("/api/v1/workspaces/").status_code == 200
    third = refresh(pair2["refresh_token"])
    assert third.is_success, third.text
    pair3 = third.json()
    assert as_user(server, pair3["access_token"]).get("/api/v1/workspaces/").status_code == 200

    # The first refresh token was spent: using it again is a theft signal.
    assert_error(refresh(first["refresh_token"]), 401, "TOKEN_REUSED")
    # ...and every token of that login is dead now, the newest ones too.
    for token in (pair3["access_token"], pair2["access_token"], first["access_token"]):
        assert_error(as_user(server, token).get("/api/v1/workspaces/"), 401, "TOKEN_REVOKED")
    assert_error(refresh(pair3["refresh_token"]), 401)
    assert_error(refresh(pair2["refresh_token"]), 401)

    # A new login is a new family: it works.
    fresh = anon.post(
        "/api/v1/auth/login",
        json={"email": "rotate@example.com", "password": "correct horse battery"},
    )
    assert fresh.is_success
    assert (
        as_user(server, fresh.json()["access_token"]).get("/api/v1/workspaces/").status_code == 200
    )


def test_wrong_credentials_get_one_answer(server: Server) -> None:
    anon = server.client()
    first = sign_up(anon, "creds@example.com")
    wrong_password = anon.post(
        "/api/v1/auth/login", json={"email": "creds@example.com", "password": "wrong password"}
    )
    no_user = anon.post(
        "/api/v1/auth/login", json={"email": "nobody@example.com", "password": "wrong password"}
    )
    a = assert_error(wrong_password, 401, "INVALID_CREDENTIALS")
    b = assert_error(no_user, 401, "INVALID_CREDENTIALS")
    del a["timestamp"], b["timestamp"]
    assert a == b, "the answer must not tell which check failed"
    # Registering a taken email answers as for a new one, and changes nothing.
    taken = anon.post(
        "/api/v1/auth/register",
        json={"email": "CREDS@example.com", "password": "another horse battery", "name": "x"},
    )
    assert taken.status_code == 201, taken.text
    new = anon.post(
        "/api/v1/auth/register",
        json={"email": "fresh@example.com", "password": "another horse battery", "name": "x"},
    )
    assert taken.json().keys() == new.json().keys()
    assert taken.json()["user_id"] == first["user_id"]
    assert taken.json()["workspace_id"] != first["workspace_id"]
    second_password = anon.post(
        "/api/v1/auth/login",
        json={"email": "creds@example.com", "password": "another horse battery"},
    )
    assert_error(second_password, 401, "INVALID_CREDENTIALS")
    still = anon.post(
        "/api/v1/auth/login",
        json={"email": "creds@example.com", "password": "correct horse battery"},
    )
    assert still.status_code == 200, still.text
