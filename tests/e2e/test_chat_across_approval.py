"""The chat stream across a human approval: held open, then on to the tool's result.

(`test_frontend_client` covers the answer through `POST /chat/{id}/confirm`.)
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor

import httpx
import pytest

from tests.e2e.client import Server, SseEvent, SseRead, is_event, read_sse, sign_up, wait_until
from tests.e2e.conftest import StartServer

pytestmark = [pytest.mark.e2e]


def session_asking_first(server: Server, email: str) -> tuple[str, str]:
    """(access token, session id) of a new user's session that asks before every call."""
    account = sign_up(server.client(), email)
    token = str(account["access_token"])
    with server.client(token) as http:
        created = http.post(
            "/api/v1/sessions/",
            json={"workspace_id": account["workspace_id"], "settings": {"confirmation": "always"}},
        )
    assert created.status_code == 201, created.text
    return token, str(created.json()["id"])


def open_chat(
    pool: ThreadPoolExecutor, http: httpx.Client, sid: str, seen: list[SseEvent]
) -> Future[SseRead]:
    def until(e: SseEvent) -> bool:
        seen.append(e)
        return e.event in ("done", "error")

    return pool.submit(
        read_sse, http, "POST", f"/api/v1/chat/{sid}/message",
        json={"content": "note it"}, until=until, timeout=30,
    )  # fmt: skip


KINDS = ("confirm_required", "tool_result")


def test_the_chat_stream_goes_on_after_a_hitl_confirm_from_another_client(
    start_server: StartServer,
) -> None:
    server = start_server("one_tool")
    token, sid = session_asking_first(server, "hold@example.com")
    seen: list[SseEvent] = []
    with ThreadPoolExecutor(1) as pool, server.client(token) as mine, server.client(token) as other:
        chat = open_chat(pool, mine, sid, seen)
        question = wait_until(lambda: next((e for e in seen if e.event == "confirm_required"), 0))
        assert isinstance(question, SseEvent)
        answered = other.post(
            f"/api/v1/hitl/{question.data['action_id']}/confirm", json={"approved": True}
        )
        assert answered.status_code == 200, answered.text
        assert answered.json()["status"] == "confirmed"
        assert answered.json()["next_action"].startswith("the run goes on")
        read = chat.result()

    stored = [e.event for e in read.stored]
    assert stored[stored.index("confirm_required") :] == [
        "confirm_required", "confirmed", "progress", "tool_result", "message", "done",
    ]  # fmt: skip
    assert read.ids == list(range(read.ids[0], read.ids[0] + len(read.ids)))  # no gap, no repeat
    assert read.of("tool_result")[0].data["status"] == "success"
    assert read.events[-1].data["status"] == "completed"
    # The approved call is seen running (live: no id, never stored) before its result,
    # and after the question. Not necessarily after `confirmed`: the worker's live delta
    # goes straight to NATS while the stored `confirmed` comes through the relay, which
    # may be a moment behind on a loaded machine (seen with two test processes).
    kinds = [(e.event, e.data.get("status"), e.id is None) for e in read.events]
    running = kinds.index(("tool_call", "running", True))
    first = {kind: next(i for i, k in enumerate(kinds) if k[0] == kind) for kind in KINDS}
    assert first["confirm_required"] < running < first["tool_result"]


def test_after_the_approval_wait_the_chat_ends_waiting_and_the_run_stays_resumable(
    start_server: StartServer,
) -> None:
    server = start_server("one_tool", extra_env={"TOKENDANCE_APPROVAL_WAIT": "1"})
    token, sid = session_asking_first(server, "wait@example.com")
    with server.client(token) as http:
        read = read_sse(
            http, "POST", f"/api/v1/chat/{sid}/message", json={"content": "note it"},
            until=is_event("done", "error"), timeout=30,
        )  # fmt: skip
        question, done = read.of("confirm_required")[0], read.events[-1]
        assert done.event == "done" and done.id is None  # not a stored event
        assert done.data["status"] == "waiting_confirmation"
        assert done.data["version"] == question.id and done.data["message_id"] is not None
        assert int(str(done.data["tokens_used"])) > 0

        pending = http.get(f"/api/v1/sessions/{sid}/hitl/pending").json()
        assert [p["request_id"] for p in pending] == [question.data["action_id"]]
        answered = http.post(
            f"/api/v1/chat/{sid}/confirm",
            json={"action_id": question.data["action_id"], "confirmed": True},
        )
        assert answered.status_code == 200, answered.text
        rest = read_sse(
            http, "GET", f"/api/v1/sessions/{sid}/stream",
            headers={"Last-Event-ID": str(question.id)}, until=is_event("done"), timeout=15,
        )  # fmt: skip
    assert [e.event for e in rest.stored] == [
        "confirmed", "progress", "tool_result", "message", "done",
    ]  # fmt: skip
    assert rest.events[-1].data["status"] == "completed"
