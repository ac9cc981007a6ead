"""Tenants never see each other (DESIGN 8.10).

User B calls every endpoint that takes an id with user A's ids: each answers 404 in
the error format, exactly as for an id that does not exist, and A's session is left
exactly as it was (a viewer's 403s are in test_teams.py; tokens in test_tokens.py).
"""

from __future__ import annotations

import json
import uuid

import httpx
import pytest

from tests.e2e.client import (
    Server,
    assert_error,
    read_sse,
    settled,
    sign_up,
    wait_until,
)
from tests.e2e.conftest import StartServer

pytestmark = [pytest.mark.e2e]

SECRET = "e2e-secret-" + "x" * 32  # what tests/e2e/client.py gives the server


def as_user(server: Server, token: object) -> httpx.Client:
    return server.client(str(token))


def everything_of(http: httpx.Client, sid: object) -> tuple[object, ...]:
    """What A can see of a session, to compare before and after B's attempts."""
    events = http.get(f"/api/v1/sessions/{sid}/events", params={"limit": 1000}).json()
    session = http.get(f"/api/v1/sessions/{sid}", params={"include_details": "true"}).json()
    pending = http.get(f"/api/v1/sessions/{sid}/hitl/pending").json()
    return events, session, pending


# -- tenants --------------------------------------------------------------------------


def test_another_tenant_gets_404_for_everything_of_mine_and_changes_nothing(
    start_server: StartServer,
) -> None:
    server = start_server(None)
    anon = server.client()
    a = sign_up(anon, "alice@example.com")
    b = sign_up(anon, "bob@example.com")
    alice, bob = as_user(server, a["access_token"]), as_user(server, b["access_token"])
    workspace = str(a["workspace_id"])
    organization = str(a["organization_id"])

    made = alice.post(
        "/api/v1/sessions/",
        json={"workspace_id": workspace, "title": "secret", "settings": {"confirmation": "always"}},
    )
    assert made.status_code == 201, made.text
    sid = made.json()["id"]
    # A pending approval of A's (a tool run by hand under "always"), for the HITL routes.
    asked = alice.post(
        "/api/v1/mcp/tools/note_progress/execute",
        json={"session_id": sid, "args": {"text": "mine"}},
    )
    assert asked.status_code == 202, asked.text
    action_id = asked.json()["action_id"]
    assert action_id
    wait_until(lambda: alice.get(f"/api/v1/sessions/{sid}/hitl/pending").json())
    before = everything_of(alice, sid)

    attempts: list[tuple[str, str, dict[str, object]]] = [
        ("GET", "/api/v1/sessions/", {"params": {"workspace_id": workspace}}),
        ("POST", "/api/v1/sessions/", {"json": {"workspace_id": workspace}}),
        ("POST", "/api/v1/workspaces/", {"json": {"name": "w", "organization_id": organization}}),
        ("GET", f"/api/v1/sessions/{sid}", {}),
        ("GET", f"/api/v1/sessions/{sid}", {"params": {"include_details": "true"}}),
        ("PATCH", f"/api/v1/sessions/{sid}", {"json": {"title": "stolen"}}),
        ("PATCH", f"/api/v1/sessions/{sid}", {"json": {"status": "completed"}}),
        ("DELETE", f"/api/v1/sessions/{sid}", {}),
        ("POST", f"/api/v1/sessions/{sid}/complete", {}),
        ("POST", f"/api/v1/sessions/{sid}/fork", {"json": {"at_version": 1}}),
        ("GET", f"/api/v1/sessions/{sid}/messages", {}),
        ("GET", f"/api/v1/sessions/{sid}/artifacts", {}),
        (
            "POST",
            f"/api/v1/sessions/{sid}/attachments",
            {"files": {"file": ("note.txt", b"from bob", "text/plain")}},
        ),
        ("GET", f"/api/v1/sessions/{sid}/events", {}),
        ("GET", f"/api/v1/sessions/{sid}/events", {"params": {"type": "SessionStarted"}}),
        ("GET", f"/api/v1/sessions/{sid}/stream", {}),
        ("GET", f"/api/v1/sessions/{sid}/stream", {"headers": {"Last-Event-ID": "1"}}),
        ("GET", f"/api/v1/sessions/{sid}/hitl/pending", {}),
        ("GET", f"/api/v1/hitl/{action_id}", {}),
        ("POST", f"/api/v1/hitl/{action_id}/confirm", {"json": {"approved": True}}),
        ("POST", f"/api/v1/chat/{sid}/message", {"json": {"content": "hi"}}),
        (
            "POST",
            f"/api/v1/chat/{sid}/confirm",
            {"json": {"action_id": action_id, "confirmed": True}},
        ),
        ("POST", f"/api/v1/chat/{sid}/stop", {}),
        ("GET", f"/api/v1/chat/{sid}/working-memory", {}),
        (
            "POST",
            "/api/v1/mcp/tools/note_progress/execute",
            {"json": {"session_id": sid, "args": {"text": "theirs"}}},
        ),
    ]
    for method, url, kwargs in attempts:
        response = bob.request(method, url, **kwargs)  # type: ignore[arg-type]
        assert_error(response, 404, "NOT_FOUND")
        # ...exactly like an id that does not exist (nothing tells B the id is taken).
        if str(sid) in url:
            missing = bob.request(method, url.replace(str(sid), str(uuid.uuid4())), **kwargs)  # type: ignore[arg-type]
            assert_error(missing, 404, "NOT_FOUND")

    # The SSE stream also takes the token as a query parameter (EventSource): same answer.
    bob_by_query = server.client()
    stream = read_sse(
        bob_by_query,
        "GET",
        f"/api/v1/sessions/{sid}/stream",
        params={"access_token": str(b["access_token"])},
        timeout=5,
    )
    assert stream.status == 404 and json.loads(stream.body)["error_code"] == "NOT_FOUND"

    # Nothing of A's changed, and nothing of A's shows up on B's side.
    settled(alice)
    assert everything_of(alice, sid) == before
    assert alice.get(f"/api/v1/hitl/{action_id}").json()["status"] == "pending"
    mine = alice.get("/api/v1/sessions/", params={"workspace_id": workspace}).json()
    assert [s["id"] for s in mine["items"]] == [sid]
    theirs_ws = bob.get("/api/v1/workspaces/").json()["items"]
    assert [w["id"] for w in theirs_ws] == [b["workspace_id"]]
    theirs = bob.get("/api/v1/sessions/", params={"workspace_id": b["workspace_id"]}).json()
    assert theirs["items"] == [] and theirs["total"] == 0


def accounts_lag(http: httpx.Client) -> int:
    health = http.get("/health").json()
    return int(next(p["lag"] for p in health["projections"] if p["name"] == "accounts"))


def test_the_workspace_list_answers_the_same_before_and_after_the_read_model_has_it(
    start_server: StartServer,
) -> None:
    server = start_server(None)
    anon = server.client()
    c = sign_up(anon, "carol@example.com")
    carol = as_user(server, c["access_token"])
    first = carol.get("/api/v1/workspaces/")
    assert first.status_code == 200, first.text
    (default,) = first.json()["items"]
    assert set(default) == {
        "id", "name", "organization_id", "team_id", "role", "created_at", "session_count",
        "settings",
    }  # fmt: skip
    assert (default["id"], default["name"], default["organization_id"], default["role"]) == (
        c["workspace_id"], "Default", c["organization_id"], "owner",
    )  # fmt: skip
    made = carol.post("/api/v1/workspaces/", json={"name": "Research"})
    assert made.status_code == 201, made.text
    # At once, whether or not the read model has applied the new workspace yet.
    right_after = carol.get("/api/v1/workspaces/").json()["items"]
    assert right_after == [default, made.json()]
    wait_until(lambda: accounts_lag(anon) == 0)
    assert carol.get("/api/v1/workspaces/").json()["items"] == right_after
