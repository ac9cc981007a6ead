"""API keys for services, and a user's own profile and password, on a real server."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest

from tests.e2e.client import Server, assert_error, is_event, read_sse, sign_up, wait_until
from tests.e2e.conftest import StartServer

pytestmark = [pytest.mark.e2e]


def with_key(server: Server, key: str) -> httpx.Client:
    return server.client(key)


def test_a_member_key_works_in_its_workspace_only_and_dies_on_revoke(
    start_server: StartServer,
) -> None:
    server = start_server("chat")
    account = sign_up(server.client(), "svc@example.com")
    user = server.client(str(account["access_token"]))
    workspace = str(account["workspace_id"])
    other = user.post("/api/v1/workspaces/", json={"name": "Other"}).json()["id"]
    other_session = user.post("/api/v1/sessions/", json={"workspace_id": other}).json()["id"]

    made = user.post(
        "/api/v1/api-keys/", json={"name": "ci", "role": "member", "workspace_id": workspace}
    )
    assert made.status_code == 201, made.text
    created = made.json()
    key = created["key"]
    assert key.startswith("tdk_") and created["prefix"] == key[:12] and len(key) > 50
    service = with_key(server, key)

    started = service.post("/api/v1/sessions/", json={"workspace_id": workspace})
    assert started.status_code == 201, started.text
    sid = started.json()["id"]
    chat = read_sse(service, "POST", f"/api/v1/chat/{sid}/message", json={"content": "hi"},
                    until=is_event("done"), timeout=30)  # fmt: skip
    assert chat.of("done")[0].data["status"] == "completed"
    stream = read_sse(service, "GET", f"/api/v1/sessions/{sid}/stream",
                      params={"access_token": key}, stored=1)  # fmt: skip
    assert stream.stored

    # Another workspace of the same user does not exist for this key.
    assert_error(service.post("/api/v1/sessions/", json={"workspace_id": other}), 404)
    assert_error(service.get(f"/api/v1/sessions/{other_session}"), 404)
    assert [w["id"] for w in service.get("/api/v1/workspaces/").json()["items"]] == [workspace]
    # A member key cannot manage, nor make more keys.
    assert_error(service.patch(f"/api/v1/workspaces/{workspace}", json={"name": "x"}), 403)
    assert_error(service.post("/api/v1/api-keys/", json={"name": "more"}), 403, "FORBIDDEN")

    def counted() -> object:
        [listed] = user.get("/api/v1/api-keys/").json()["items"]
        return listed if listed["uses"] >= 5 else None

    def billed_to_the_key() -> object:
        report = user.get("/api/v1/usage", params={"group_by": "api_key"}).json()
        return [i for i in report["items"] if i.get("api_key_id") == created["id"]]

    [billed] = wait_until(billed_to_the_key, timeout=15)  # type: ignore[misc]
    assert billed["calls"] >= 1 and billed["input_tokens"] > 0

    listed = wait_until(counted)
    assert isinstance(listed, dict)
    assert "key" not in listed and listed["last_used_at"] and not listed["revoked"]

    revoked = user.delete(f"/api/v1/api-keys/{created['id']}")
    assert revoked.status_code == 204, revoked.text
    assert_error(service.get(f"/api/v1/sessions/{sid}"), 401, "TOKEN_REVOKED")
    assert user.delete(f"/api/v1/api-keys/{created['id']}").status_code == 204  # idempotent
    assert user.get("/api/v1/api-keys/").json()["items"][0]["revoked"] is True


def test_keys_are_refused_with_a_clear_error_and_a_viewer_key_only_reads(
    start_server: StartServer,
) -> None:
    server = start_server(None)
    account = sign_up(server.client(), "svc@example.com")
    user = server.client(str(account["access_token"]))
    workspace = str(account["workspace_id"])
    past = (datetime.now(UTC) - timedelta(hours=1)).isoformat()
    bad = [
        {"name": "x", "role": "superuser"},
        {"name": "x", "expires_at": past},
        {"name": ""},
        {"name": "x" * 201},
        {"name": "x", "workspace_id": "not-a-uuid"},
    ]
    for body in bad:
        assert_error(user.post("/api/v1/api-keys/", json=body), 400)
    foreign = user.post(
        "/api/v1/api-keys/",
        json={"name": "x", "workspace_id": "00000000-0000-4000-8000-000000000001"},
    )
    assert_error(foreign, 404)
    assert user.get("/api/v1/api-keys/").json()["items"] == []  # nothing written

    viewer_key = user.post("/api/v1/api-keys/", json={"name": "ro", "role": "viewer"}).json()["key"]
    reader = with_key(server, viewer_key)
    assert reader.get("/api/v1/workspaces/").status_code == 200
    body = assert_error(reader.post("/api/v1/sessions/", json={"workspace_id": workspace}), 403)
    assert "viewer" in str(body["detail"])
    for nonsense in ("tdk_" + "a" * 52, "tdk_", "tdk_" + "!" * 40):
        assert_error(with_key(server, nonsense).get("/api/v1/workspaces/"), 401)


def test_a_profile_changes_and_a_new_password_ends_every_other_login(
    start_server: StartServer,
) -> None:
    server = start_server(None)
    anon = server.client()
    account = sign_up(anon, "pat@example.com")
    other_login = anon.post(
        "/api/v1/auth/login", json={"email": "pat@example.com", "password": "correct horse battery"}
    ).json()
    me = server.client(str(account["access_token"]))
    changed = me.patch(
        "/api/v1/auth/me",
        json={"name": "Pat Doe", "avatar_url": "https://example.com/p.png",
              "preferences": {"theme": "dark", "language": "zh-CN"}},
    )  # fmt: skip
    assert changed.status_code == 200, changed.text
    got = me.get("/api/v1/auth/me").json()
    assert (got["name"], got["avatar_url"]) == ("Pat Doe", "https://example.com/p.png")
    assert got["preferences"] == {"theme": "dark", "language": "zh-CN"}
    cleared = me.patch("/api/v1/auth/me", json={"avatar_url": None}).json()
    assert cleared["avatar_url"] is None and cleared["name"] == "Pat Doe"
    too_big = {"preferences": {"blob": "x" * (16 * 1024)}}
    assert_error(me.patch("/api/v1/auth/me", json=too_big), 400)
    assert_error(me.patch("/api/v1/auth/me", json={"avatar_url": "javascript:alert(1)"}), 400)
    assert me.get("/api/v1/auth/me").json()["preferences"] == {
        "theme": "dark", "language": "zh-CN"
    }  # fmt: skip

    wrong = me.post(
        "/api/v1/auth/password", json={"old_password": "not it at all", "new_password": "n" * 12}
    )
    assert_error(wrong, 403, "WRONG_PASSWORD")
    done = me.post(
        "/api/v1/auth/password",
        json={"old_password": "correct horse battery", "new_password": "a much better one"},
    )
    assert done.status_code == 200, done.text
    for refresh in (account["refresh_token"], other_login["refresh_token"]):
        assert_error(anon.post("/api/v1/auth/refresh", json={"refresh_token": refresh}), 401)
    renewed = anon.post(
        "/api/v1/auth/refresh", json={"refresh_token": done.json()["refresh_token"]}
    )
    assert renewed.status_code == 200, renewed.text
    old = {"email": "pat@example.com", "password": "correct horse battery"}
    assert_error(anon.post("/api/v1/auth/login", json=old), 401, "INVALID_CREDENTIALS")
    new = {"email": "pat@example.com", "password": "a much better one"}
    assert anon.post("/api/v1/auth/login", json=new).status_code == 200
