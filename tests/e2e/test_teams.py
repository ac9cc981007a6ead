"""Teams on a real server: an owner, a member and a viewer share a team workspace, the
policy table holds over HTTP, a removed member is cut off (streams included), and an
invitation makes a newcomer a member once."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.e2e.client import Server, assert_error, is_event, read_sse, sign_up, wait_until
from tests.e2e.conftest import StartServer

pytestmark = [pytest.mark.e2e]


def as_user(server: Server, account: dict[str, object]) -> httpx.Client:
    return server.client(str(account["access_token"]))


def team_workspace(owner: httpx.Client, settings: dict[str, object]) -> tuple[str, str]:
    """(team id, workspace id) of a new team with one workspace whose sessions default to
    `settings`."""
    team = owner.post("/api/v1/teams/", json={"name": "Research"})
    assert team.status_code == 201, team.text
    assert team.json()["role"] == "owner" and team.json()["created_at"]
    team_id = team.json()["id"]
    made = owner.post("/api/v1/workspaces/", json={"name": "Papers", "team_id": team_id})
    assert made.status_code == 201, made.text
    workspace_id = made.json()["id"]
    changed = owner.patch(f"/api/v1/workspaces/{workspace_id}", json={"settings": settings})
    assert changed.status_code == 200, changed.text
    assert changed.json()["settings"] == settings
    return team_id, workspace_id


def add(owner: httpx.Client, team_id: str, email: str, role: str) -> httpx.Response:
    return owner.post(f"/api/v1/teams/{team_id}/members", json={"email": email, "role": role})


def test_a_team_of_three_shares_a_workspace_and_each_role_does_what_the_policy_says(
    start_server: StartServer,
) -> None:
    server = start_server("one_tool")
    anon = server.client()
    o, m, v = (sign_up(anon, f"{who}@example.com") for who in ("olga", "mark", "vera"))
    owner, member, viewer = as_user(server, o), as_user(server, m), as_user(server, v)
    other = as_user(server, sign_up(anon, "mia@example.com"))
    team_id, workspace = team_workspace(owner, {"confirmation": "always"})
    assert add(owner, team_id, "mark@example.com", "member").status_code == 201
    assert add(owner, team_id, "mia@example.com", "member").status_code == 201
    added = add(owner, team_id, "vera@example.com", "viewer")
    assert added.status_code == 201 and added.json()["role"] == "viewer"

    members = owner.get(f"/api/v1/teams/{team_id}/members").json()["items"]
    assert [(x["email"], x["role"]) for x in members] == [
        ("olga@example.com", "owner"), ("mark@example.com", "member"),
        ("mia@example.com", "member"), ("vera@example.com", "viewer"),
    ]  # fmt: skip
    assert all(x["joined_at"] for x in members)
    [listed] = [t for t in viewer.get("/api/v1/teams/").json()["items"] if t["id"] == team_id]
    assert (listed["role"], listed["member_count"]) == ("viewer", 4)
    # The team's workspace is theirs; the owner's personal one is not.
    assert workspace in {w["id"] for w in member.get("/api/v1/workspaces/").json()["items"]}
    assert str(o["workspace_id"]) not in {
        w["id"] for w in member.get("/api/v1/workspaces/").json()["items"]
    }

    # The member starts a session (the workspace's defaults: ask before every call),
    # chats, and approves the call its run asks about.
    created = member.post("/api/v1/sessions/", json={"workspace_id": workspace})
    assert created.status_code == 201, created.text
    sid = created.json()["id"]
    asked = read_sse(
        member, "POST", f"/api/v1/chat/{sid}/message", json={"content": "note it"},
        until=is_event("confirm_required"), timeout=30,
    )  # fmt: skip
    action_id = asked.of("confirm_required")[0].data["action_id"]
    # Another member cannot answer Mark's run; Mark can.
    theirs = other.post(
        f"/api/v1/chat/{sid}/confirm", json={"action_id": action_id, "confirmed": False}
    )
    assert "admin" in str(assert_error(theirs, 403, "FORBIDDEN")["detail"])
    approved = member.post(
        f"/api/v1/chat/{sid}/confirm", json={"action_id": action_id, "confirmed": True}
    )
    assert approved.status_code == 200, approved.text

    # The viewer reads the session, its stream and its artifacts, and changes nothing.
    assert viewer.get(f"/api/v1/sessions/{sid}").status_code == 200
    assert read_sse(viewer, "GET", f"/api/v1/sessions/{sid}/stream", stored=2).stored
    assert viewer.get(f"/api/v1/sessions/{sid}/artifacts").status_code == 200
    refused = [
        viewer.post(f"/api/v1/chat/{sid}/message", json={"content": "let me"}),
        viewer.post(f"/api/v1/chat/{sid}/confirm", json={"action_id": action_id,
                                                         "confirmed": False}),
        viewer.post(f"/api/v1/sessions/{sid}/attachments",
                    files={"file": ("a.txt", b"hello", "text/plain")}),
        viewer.post(f"/api/v1/sessions/{sid}/fork", json={"at_version": 1}),
        viewer.post("/api/v1/sessions/", json={"workspace_id": workspace}),
        add(viewer, team_id, "olga@example.com", "viewer"),
    ]  # fmt: skip
    for answer in refused:
        body = assert_error(answer, 403, "FORBIDDEN")
        assert "viewer" in str(body["detail"]), body

    # The owner sees the team's spend.
    def team_spend() -> list[dict[str, object]]:
        items = owner.get("/api/v1/usage", params={"group_by": "team"}).json()["items"]
        return [i for i in items if i.get("team_id") == team_id and i["calls"] > 0]

    assert wait_until(team_spend, timeout=15)


def test_a_removed_member_is_cut_off_at_once_and_their_stream_ends(
    start_server: StartServer,
) -> None:
    server = start_server("chat")
    anon = server.client()
    o, m = sign_up(anon, "olga@example.com"), sign_up(anon, "mark@example.com")
    owner, member = as_user(server, o), as_user(server, m)
    team_id, workspace = team_workspace(owner, {"confirmation": "never"})
    assert add(owner, team_id, "mark@example.com", "member").status_code == 201
    sid = member.post("/api/v1/sessions/", json={"workspace_id": workspace}).json()["id"]
    user_id = m["user_id"]

    with ThreadPoolExecutor(1) as pool:
        # Opened before the removal; the server must close it (read_sse fails otherwise).
        stream = pool.submit(read_sse, member, "GET", f"/api/v1/sessions/{sid}/stream",
                             timeout=12)  # fmt: skip
        time.sleep(0.5)
        removed = owner.delete(f"/api/v1/teams/{team_id}/members/{user_id}")
        assert removed.status_code == 204, removed.text
        assert stream.result(timeout=15).ended

    assert_error(member.get(f"/api/v1/sessions/{sid}"), 404, "NOT_FOUND")
    assert_error(member.post(f"/api/v1/chat/{sid}/message", json={"content": "hi"}), 404)
    assert workspace not in {w["id"] for w in member.get("/api/v1/workspaces/").json()["items"]}
    # The last owner can neither leave nor be demoted.
    owner_id = o["user_id"]
    left = owner.delete(f"/api/v1/teams/{team_id}/members/{owner_id}")
    assert "at least one owner" in str(assert_error(left, 409, "INVALID_COMMAND")["detail"])
    demoted = owner.patch(f"/api/v1/teams/{team_id}/members/{owner_id}", json={"role": "admin"})
    assert_error(demoted, 409, "INVALID_COMMAND")
    assert [x["role"] for x in owner.get(f"/api/v1/teams/{team_id}/members").json()["items"]] == [
        "owner"
    ]
    # Another tenant's team does not exist for them; bad names write nothing.
    for answer in (
        member.get(f"/api/v1/teams/{team_id}"),
        member.delete(f"/api/v1/teams/{team_id}"),
        add(member, team_id, "mark@example.com", "member"),
    ):
        assert_error(answer, 404, "NOT_FOUND")
    for name in ("", "x" * 201):
        assert_error(owner.post("/api/v1/teams/", json={"name": name}), 400)
    assert_error(add(owner, team_id, "mark@example.com", "superuser"), 400)
    assert len(owner.get("/api/v1/teams/").json()["items"]) == 2  # Default and Research
    # Deleting the team takes its workspace, and the sessions in it, out of reach.
    assert owner.delete(f"/api/v1/teams/{team_id}").status_code == 204
    assert_error(owner.get(f"/api/v1/sessions/{sid}"), 404, "NOT_FOUND")
    assert workspace not in {w["id"] for w in owner.get("/api/v1/workspaces/").json()["items"]}


def test_an_invitation_makes_a_newcomer_a_member_once_and_expires(
    start_server: StartServer,
) -> None:
    server = start_server(None, extra_env={"TOKENDANCE_INVITATION_TTL": "3"})
    anon = server.client()
    owner = as_user(server, sign_up(anon, "olga@example.com"))
    team_id, workspace = team_workspace(owner, {"confirmation": "never", "model": "m1"})

    invited = add(owner, team_id, "nina@example.com", "member")
    assert invited.status_code == 202, invited.text
    invitation = invited.json()
    assert invitation.keys() >= {"invitation_id", "email", "role", "expires_at", "token"}
    late = add(owner, team_id, "late@example.com", "viewer").json()["token"]

    nina = as_user(server, sign_up(anon, "nina@example.com"))
    accepted = nina.post(f"/api/v1/invitations/{invitation['token']}/accept")
    assert accepted.status_code == 201, accepted.text
    assert accepted.json()["role"] == "member" and accepted.json()["joined_at"]
    assert workspace in {w["id"] for w in nina.get("/api/v1/workspaces/").json()["items"]}
    again = nina.post(f"/api/v1/invitations/{invitation['token']}/accept")
    assert_error(again, 410, "INVITATION_INVALID")
    assert_error(nina.post("/api/v1/invitations/tdi_nothing/accept"), 404)
    # Inviting someone who is already in the team.
    assert_error(add(owner, team_id, "nina@example.com", "viewer"), 409, "ALREADY_MEMBER")

    time.sleep(3.2)  # the late invitation's lifetime (TOKENDANCE_INVITATION_TTL=3)
    latecomer = as_user(server, sign_up(anon, "late@example.com"))
    assert_error(latecomer.post(f"/api/v1/invitations/{late}/accept"), 410, "INVITATION_INVALID")
    assert workspace not in {w["id"] for w in latecomer.get("/api/v1/workspaces/").json()["items"]}
