"""The push channel (`WS /api/v1/ws`) on a real server: a subscriber is told its session's
status and that the deck is ready; another tenant is told nothing of it; a removed team
member stops hearing of the team's session; bad input answers an `error` or closes the
socket with a reason, and other sockets go on."""

from __future__ import annotations

import uuid

import httpx
import pytest

from tests.e2e.chat_helpers import chat, new_session, user
from tests.e2e.client import Server, sign_up
from tests.e2e.conftest import StartServer
from tests.e2e.push import Push, kind
from tests.e2e.test_teams import add, as_user, team_workspace

pytestmark = [pytest.mark.e2e]


def test_a_subscriber_hears_of_its_runs_and_its_deck_and_another_tenant_of_nothing(
    start_server: StartServer,
) -> None:
    server = start_server("deck")
    alice, http = user(server.client(), "alice@example.com")
    bob = sign_up(server.client(), "bob@example.com")
    sid = str(new_session(http, alice["workspace_id"])["id"])

    mine = Push.open(server, str(alice["access_token"]))  # the query parameter
    mine.subscribe(sid)
    assert mine.until(kind("subscribed"))["session_ids"] == [sid]
    first = mine.until(kind("session_update", session_id=sid))
    assert (first["status"], first["title"]) == ("created", "Heat pumps")

    theirs = Push.open(server)
    theirs.send({"type": "auth", "token": bob["access_token"]})  # the first message
    unknown = str(uuid.uuid4())
    theirs.subscribe(sid, unknown)
    assert theirs.until(kind("subscribed"))["session_ids"] == []
    refused = theirs.of("error")
    assert [(e["session_id"], e["error_code"]) for e in refused] == [
        (sid, "NOT_FOUND"), (unknown, "NOT_FOUND"),
    ]  # fmt: skip
    assert refused[0]["detail"].replace(sid, "X") == refused[1]["detail"].replace(unknown, "X")

    done = chat(http, sid, "a deck on heat pumps, please")
    assert done.events[-1].event == "done", done.events[-1]
    ready = mine.until(kind("notification", kind="artifact_ready"))
    assert ready["session_id"] == sid and "deck" in str(ready["message"]).lower()
    [artifact] = [e.data for e in done.of("artifact")]
    assert ready["artifact_id"] == artifact["artifact_id"]
    ended = mine.until(kind("notification", kind="run_completed"))
    assert ended["session_id"] == sid and ended["run_id"] == done.events[-1].data["run_id"]
    last = mine.until(kind("session_update", status="completed"))
    assert last["version"] == done.events[-1].id
    statuses = [m["status"] for m in mine.of("session_update")]
    assert statuses == ["created", "running", "completed"], statuses

    theirs.ping()  # what the server would have sent bob is read by now
    assert [m for m in theirs.messages if m.get("session_id") == sid] == refused[:1]
    assert {m["type"] for m in theirs.messages} == {"subscribed", "error", "pong"}
    mine.close()
    theirs.close()


def test_a_member_removed_from_the_team_stops_hearing_of_its_session(
    start_server: StartServer,
) -> None:
    server = start_server("chat")
    anon = server.client()
    o, m = sign_up(anon, "olga@example.com"), sign_up(anon, "mark@example.com")
    owner = as_user(server, o)
    team_id, workspace = team_workspace(owner, {"confirmation": "never"})
    assert add(owner, team_id, "mark@example.com", "member").status_code == 201
    sid = str(owner.post("/api/v1/sessions/", json={"workspace_id": workspace}).json()["id"])

    member = Push.open(server, str(m["access_token"]))
    member.subscribe(sid)
    assert member.until(kind("subscribed"))["session_ids"] == [sid]
    removed = owner.delete(f"/api/v1/teams/{team_id}/members/{m['user_id']}")
    assert removed.status_code == 204, removed.text
    dropped = member.until(kind("error", session_id=sid))
    assert dropped["error_code"] == "NOT_FOUND"
    assert member.until(kind("unsubscribed"))["session_ids"] == [sid]

    chat(owner, sid, "anything new?")
    member.ping()
    after = member.messages[member.messages.index(dropped) + 1 :]
    assert not [x for x in after if x.get("session_id") == sid], after
    member.close()


def test_bad_input_answers_an_error_or_closes_with_a_reason(
    start_server: StartServer,
) -> None:
    server = start_server(None)
    alice, _, sid = alice_and_a_session(server)
    token = str(alice["access_token"])
    bystander = Push.open(server, token)  # the same user's other socket: never affected

    push = Push.open(server, token)
    push.send("this is not JSON")
    assert push.until(kind("error"))["error_code"] == "INVALID_JSON"
    push.send({"type": "shout", "text": "hi"})
    unknown = push.until(kind("error", error_code="UNKNOWN_MESSAGE_TYPE"))
    assert "shout" in str(unknown["detail"])
    push.send({"type": "subscribe", "session_ids": ["not-a-uuid"]})
    invalid = push.until(kind("error", error_code="VALIDATION_ERROR"))
    assert "session_ids" in str(invalid["detail"])
    push.send({"type": "subscribe"})
    assert "session_ids" in str(push.until(kind("error"))["detail"])
    push.ping()  # still open, still answering

    many = [str(uuid.uuid4()) for _ in range(10_000)]
    push.subscribe(*many)
    assert push.until(kind("error"))["error_code"] == "TOO_MANY_SESSIONS"
    code, reason = push.closed()
    assert code == 1008 and "500" in reason, (code, reason)

    huge = Push.open(server, token)
    huge.send(" " * (1024 * 1024))
    code, reason = huge.closed()
    assert code == 1009 and "bytes" in reason, (code, reason)

    for bad in (Push.open(server, "not-a-token"), Push.open(server, "tdk_" + "0" * 40)):
        code, reason = bad.closed()
        assert code == 1008 and "not authenticated" in reason, (code, reason)
    first = Push.open(server)
    first.send({"type": "ping"})
    code, reason = first.closed()
    assert code == 1008 and "auth" in reason, (code, reason)
    silent = Push.open(server)
    code, reason = silent.closed()
    assert code == 1008 and "no auth message" in reason, (code, reason)

    bystander.ping()
    bystander.subscribe(sid)
    assert bystander.until(kind("subscribed"))["session_ids"] == [sid]
    bystander.close()


def test_a_logged_out_socket_hears_no_more_and_may_not_subscribe_again(
    start_server: StartServer,
) -> None:
    server = start_server(None)
    alice, http, sid = alice_and_a_session(server)
    push = Push.open(server, str(alice["access_token"]))
    push.subscribe(sid)
    assert push.until(kind("subscribed"))["session_ids"] == [sid]

    assert http.post("/api/v1/auth/logout").status_code == 204
    assert push.until(kind("unsubscribed"))["session_ids"] == [sid]
    push.subscribe(sid)
    code, reason = push.closed()
    assert code == 1008 and "not authenticated" in reason, (code, reason)


def test_a_shutdown_closes_the_sockets_and_the_server_exits_cleanly(
    start_server: StartServer,
) -> None:
    server = start_server(None)
    alice, _, sid = alice_and_a_session(server)
    following, idle = Push.open(server, str(alice["access_token"])), Push.open(server)
    following.subscribe(sid)
    following.until(kind("session_update"))
    idle.send({"type": "auth", "token": alice["access_token"]})
    idle.ping()

    server.stop()
    assert server.process is not None and server.process.returncode == 0
    for push in (following, idle):
        code, reason = push.closed()
        assert code == 1001 and "connect again" in reason, (code, reason)


def alice_and_a_session(server: Server) -> tuple[dict[str, object], httpx.Client, str]:
    """A signed-up user, their client, and a session of theirs."""
    alice, http = user(server.client(), "alice@example.com")
    return alice, http, str(new_session(http, alice["workspace_id"])["id"])
