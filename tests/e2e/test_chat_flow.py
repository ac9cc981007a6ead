"""A user's chat with the agent over HTTP and SSE, against a real `tokendance serve`.

Register, open a session that asks before every tool call, chat (the run streams until
it waits for approval), approve through both approval APIs, follow the session stream
to the end, and read what the run left: working memory, messages, the audit log.
Also: a rejection, and answers to actions that are unknown or already answered (stops:
`test_chat_stop.py`; no model at all: `test_chat_without_model.py`).
"""

from __future__ import annotations

from uuid import UUID

import pytest

from tests.e2e.chat_helpers import (
    QUESTION,
    assert_contiguous,
    audit_log,
    chat,
    follow,
    new_session,
    stored_types,
    user,
)
from tests.e2e.client import assert_error, settled, wait_until
from tests.e2e.conftest import StartServer

pytestmark = [pytest.mark.e2e]

THINKING = "The user wants facts about heat pumps; plan first."
FIRST_TEXT = "Let me plan this."
FINDING = "Heat pumps deliver 3 units of heat per unit of electricity"
ANSWER = "Heat pumps deliver about three units of heat per unit of electricity."


# -- the whole flow ---------------------------------------------------------------


def test_chat_streams_the_run_waits_for_approval_and_finishes(
    start_server: StartServer,
) -> None:
    server = start_server("chat")
    account, http = user(server.client(), "alice@example.com")

    workspaces = http.get("/api/v1/workspaces/")
    assert workspaces.status_code == 200, workspaces.text
    assert [(w["id"], w["role"]) for w in workspaces.json()["items"]] == [
        (account["workspace_id"], "owner")
    ]

    session = new_session(http, account["workspace_id"], confirmation="always")
    sid = session["id"]
    assert session["status"] == "created" and session["version"] == 1
    assert session["workspace_id"] == account["workspace_id"]
    details = http.get(f"/api/v1/sessions/{sid}", params={"include_details": "true"}).json()
    assert details["details"]["settings"] == {"confirmation": "always"}

    # 1. The chat: the message, the run, live deltas, the turn, the call, the question.
    # (The chat stream stays open while the run waits; this client stops reading at the
    # question and follows the session stream instead, as a client that went away does.)
    first = chat(http, sid, "What do heat pumps deliver?", timeout=15, until=QUESTION)
    assert stored_types(first.events) == [
        "message", "run", "run", "message", "tool_call", "confirm_required",
    ]  # fmt: skip
    assert_contiguous(first.ids, 2)
    assert first.events[-1].event == "confirm_required"
    by_type = {e.event: e for e in first.stored}
    question_message, turn_event = first.of("message")
    assert question_message.data["role"] == "user"
    assert question_message.data["content"] == "What do heat pumps deliver?"
    assert [e.data["status"] for e in first.of("run")] == ["requested", "started"]

    live = [e for e in first.events if e.id is None]
    thinking = [e for e in live if e.event == "thinking" and "status" not in e.data]
    content = [e for e in live if e.event == "content"]
    assert thinking and content, [(e.event, e.data) for e in live]
    assert "".join(str(e.data["content"]) for e in thinking) == THINKING
    assert "".join(str(e.data["content"]) for e in first.of("content")) == FIRST_TEXT
    turn_at = first.events.index(turn_event)
    assert all(first.events.index(e) < turn_at for e in thinking + content), (
        "live deltas come before the stored turn"
    )

    turn = turn_event.data
    assert turn["role"] == "assistant" and turn["id"] == str(turn_event.id)
    assert turn["content"] == FIRST_TEXT and turn["stop_reason"] == "tool_use"
    assert [c["name"] for c in turn["tool_calls"]] == ["update_plan"]
    call = by_type["tool_call"].data
    assert call["name"] == "update_plan" and call["id"] == "toolu_plan"
    question = by_type["confirm_required"].data
    assert question["tool"] == "update_plan" and question["tool_call_id"] == "toolu_plan"
    action_id = str(question["action_id"])

    # 2. Approve it through the chat API.
    pending = http.get(f"/api/v1/sessions/{sid}/hitl/pending")
    assert pending.status_code == 200, pending.text
    assert [p["request_id"] for p in pending.json()] == [action_id]
    approved = http.post(
        f"/api/v1/chat/{sid}/confirm",
        json={"action_id": action_id, "confirmed": True, "feedback": "go ahead"},
    )
    assert approved.status_code == 200, approved.text
    assert approved.json()["request_id"] == action_id and approved.json()["approved"] is True
    assert approved.json()["session_id"] == sid
    assert approved.json()["status"] == "confirmed"
    assert "update_plan runs" in approved.json()["next_action"]

    # 3. The run goes on to the next question; answer it through the HITL API.
    def next_request() -> dict[str, object] | None:
        rows = http.get(f"/api/v1/sessions/{sid}/hitl/pending").json()
        return next((r for r in rows if r["operation"] == "record_finding"), None)

    request = wait_until(next_request)
    assert isinstance(request, dict)
    request_id = str(request["request_id"])
    assert request["session_id"] == sid and request["status"] == "pending"
    one = http.get(f"/api/v1/hitl/{request_id}")
    assert one.status_code == 200, one.text
    assert one.json()["context"]["tool_call_id"] == "toolu_find"
    assert one.json()["context"]["args"]["text"] == FINDING
    answered = http.post(
        f"/api/v1/hitl/{request_id}/confirm", json={"approved": True, "user_feedback": "fine"}
    )
    assert answered.status_code == 200, answered.text
    assert answered.json()["approved"] is True and answered.json()["user_feedback"] == "fine"

    # 4. Follow the session stream from the last id the chat gave: the rest, once.
    rest = follow(http, sid, first.ids[-1], timeout=15)
    assert_contiguous(rest.ids, first.ids[-1] + 1)
    types = stored_types(rest.events)
    assert types == [
        "confirmed", "plan", "tool_result", "message", "tool_call", "confirm_required",
        "confirmed", "finding", "tool_result", "message", "done",
    ], types  # fmt: skip
    confirmed = rest.of("confirmed")
    assert [c.data["action_id"] for c in confirmed] == [action_id, request_id]
    assert [c.data["feedback"] for c in confirmed] == ["go ahead", "fine"]
    results = rest.of("tool_result")
    assert [(r.data["id"], r.data["status"], r.data["success"]) for r in results] == [
        ("toolu_plan", "success", True),
        ("toolu_find", "success", True),
    ]
    final_turn = rest.of("message")[-1]
    assert final_turn.data["content"] == ANSWER and final_turn.data["tool_calls"] == []
    done = rest.events[-1]
    assert done.event == "done" and done.data["status"] == "completed"
    final = done.id
    assert final is not None

    # 5. What the run left behind.
    answered_row = wait_until(
        lambda: (r := http.get(f"/api/v1/hitl/{request_id}").json())["status"] == "approved" and r
    )
    assert isinstance(answered_row, dict)
    assert answered_row["user_feedback"] == "fine" and answered_row["responded_at"]
    assert http.get(f"/api/v1/sessions/{sid}/hitl/pending").json() == []

    def memory() -> dict[str, object] | None:
        body = http.get(f"/api/v1/chat/{sid}/working-memory").json()
        return body if FINDING in body["findings"]["content"] else None

    wm = wait_until(memory)
    assert isinstance(wm, dict)
    assert wm["session_id"] == sid
    assert "Find heat pump facts" in wm["task_plan"]["content"]
    assert "Answer" in wm["task_plan"]["content"]
    assert "https://example.org/heat-pumps" in wm["findings"]["content"]
    assert wm["findings"]["metadata"]["findings"] == 1

    messages = http.get(f"/api/v1/sessions/{sid}/messages")
    assert messages.status_code == 200, messages.text
    items = messages.json()["items"]
    assert [(m["role"], m["content"]) for m in items] == [
        ("user", "What do heat pumps deliver?"),
        ("assistant", FIRST_TEXT),
        ("assistant", "Recording what I found."),
        ("assistant", ANSWER),
    ]
    assert items[1]["thinking"] == THINKING
    assert [c["name"] for c in items[1]["tool_calls"]] == ["update_plan"]
    # Reopened, each call says how it ended (approved, then run).
    assert [(c["id"], c["status"]) for m in items for c in m["tool_calls"]] == [
        ("toolu_plan", "success"), ("toolu_find", "success"),
    ]  # fmt: skip
    assert all(m["session_id"] == sid and m["created_at"] for m in items)
    assert messages.json()["total"] == 4
    last_two = http.get(f"/api/v1/sessions/{sid}/messages", params={"limit": 2}).json()
    assert [m["content"] for m in last_two["items"]] == ["Recording what I found.", ANSWER]

    # 6. The audit log: raw events, paginated by version, filterable by type.
    page = http.get(f"/api/v1/sessions/{sid}/events", params={"limit": 5}).json()
    assert [i["version"] for i in page["items"]] == [1, 2, 3, 4, 5]
    assert page["next_cursor"] and page["limit"] == 5
    assert [i["type"] for i in page["items"]][:4] == [
        "SessionStarted", "UserMessageAppended", "RunRequested", "RunStarted",
    ]  # fmt: skip
    for item in page["items"]:
        assert set(item) == {"version", "type", "timestamp", "payload", "prev_hash", "hash"}
        assert "originator_id" not in item["payload"]
    assert page["items"][1]["payload"]["text"] == "What do heat pumps deliver?"
    second = http.get(f"/api/v1/sessions/{sid}/events", params={"after": 5, "limit": 5}).json()
    assert [i["version"] for i in second["items"]] == [6, 7, 8, 9, 10]
    cursor = {"cursor": page["next_cursor"], "limit": 5}
    assert http.get(f"/api/v1/sessions/{sid}/events", params=cursor).json() == second
    only = http.get(
        f"/api/v1/sessions/{sid}/events", params={"type": "ToolResultRecorded", "limit": 1}
    ).json()
    assert [i["type"] for i in only["items"]] == ["ToolResultRecorded"]
    assert only["items"][0]["payload"]["tool_use_id"] == "toolu_plan"
    more = http.get(
        f"/api/v1/sessions/{sid}/events",
        params={"type": "ToolResultRecorded", "cursor": only["next_cursor"]},
    ).json()
    assert [i["payload"]["tool_use_id"] for i in more["items"]] == ["toolu_find"]
    assert more["next_cursor"] is None
    everything = audit_log(http, sid)
    assert [i["version"] for i in everything] == list(range(1, final + 1))
    assert everything[-1]["type"] == "RunCompleted"
    beyond = http.get(f"/api/v1/sessions/{sid}/events", params={"after": final}).json()
    assert beyond["items"] == [] and beyond["next_cursor"] is None

    summary = wait_until(
        lambda: (s := http.get(f"/api/v1/sessions/{sid}").json())["version"] == final and s
    )
    assert isinstance(summary, dict)
    assert summary["status"] == "completed" and summary["active_run_id"] is None
    assert summary["message_count"] == 4 and summary["tool_call_count"] == 2


# -- rejection, stop, answers that cannot be given ---------------------------------------


def test_rejecting_an_action_records_a_cancelled_result_and_the_run_goes_on(
    start_server: StartServer,
) -> None:
    server = start_server("one_tool")
    account, http = user(server.client(), "rex@example.com")
    sid = new_session(http, account["workspace_id"], confirmation="always")["id"]

    first = chat(http, sid, "Note your progress", timeout=15, until=QUESTION)
    question = first.events[-1]
    assert question.event == "confirm_required", stored_types(first.events)
    action_id = question.data["action_id"]

    rejected = http.post(
        f"/api/v1/chat/{sid}/confirm",
        json={"action_id": action_id, "confirmed": False, "feedback": "not now"},
    )
    assert rejected.status_code == 200, rejected.text
    assert rejected.json()["approved"] is False and rejected.json()["user_feedback"] == "not now"
    assert rejected.json()["status"] == "rejected"
    assert "without note_progress" in rejected.json()["next_action"]

    rest = follow(http, sid, question.id or 0, timeout=15)
    assert stored_types(rest.events) == ["confirmed", "tool_result", "message", "done"]
    assert rest.of("confirmed")[0].data == {
        **rest.of("confirmed")[0].data, "approved": False, "feedback": "not now",
    }  # fmt: skip
    result = rest.of("tool_result")[0].data
    assert result["id"] == "toolu_note_1"
    assert result["status"] == "cancelled" and result["success"] is False
    assert "not now" in str(result["result"])
    assert rest.events[-1].data["status"] == "completed"

    types = [e["type"] for e in audit_log(http, sid)]
    assert "ProgressNoted" not in types


def test_confirming_an_unknown_or_answered_action_is_refused_and_records_nothing(
    start_server: StartServer,
) -> None:
    server = start_server("one_tool")
    account, http = user(server.client(), "una@example.com")
    sid = new_session(http, account["workspace_id"], confirmation="always")["id"]
    other = new_session(http, account["workspace_id"])["id"]

    # Nothing is pending yet.
    before = audit_log(http, sid)
    unknown = http.post(
        f"/api/v1/chat/{sid}/confirm", json={"action_id": "no-such-action", "confirmed": True}
    )
    assert_error(unknown, 404, "CONFIRMATION_NOT_FOUND")
    assert_error(http.get("/api/v1/hitl/no-such-action"), 404)
    assert_error(http.post("/api/v1/hitl/no-such-action/confirm", json={"approved": True}), 404)
    assert audit_log(http, sid) == before

    first = chat(http, sid, "Note your progress", timeout=15, until=QUESTION)
    action_id = str(first.events[-1].data["action_id"])

    # The action of one session cannot be answered through another one.
    before_other = audit_log(http, other)
    crossed = http.post(
        f"/api/v1/chat/{other}/confirm", json={"action_id": action_id, "confirmed": True}
    )
    assert_error(crossed, 404, "CONFIRMATION_NOT_FOUND")
    assert audit_log(http, other) == before_other

    ok = http.post(f"/api/v1/chat/{sid}/confirm", json={"action_id": action_id, "confirmed": True})
    assert ok.status_code == 200, ok.text
    rest = follow(http, sid, first.ids[-1], timeout=15)
    assert rest.events[-1].data["status"] == "completed"
    before = audit_log(http, sid)

    twice = http.post(
        f"/api/v1/chat/{sid}/confirm", json={"action_id": action_id, "confirmed": False}
    )
    assert_error(twice, 409, "CONFIRMATION_ALREADY_ANSWERED")
    hitl_twice = http.post(f"/api/v1/hitl/{action_id}/confirm", json={"approved": False})
    assert_error(hitl_twice, 409, "CONFIRMATION_ALREADY_ANSWERED")
    garbage = http.post(
        f"/api/v1/chat/{sid}/confirm", json={"action_id": str(UUID(int=7)), "confirmed": True}
    )
    assert_error(garbage, 404, "CONFIRMATION_NOT_FOUND")
    settled(http)
    assert audit_log(http, sid) == before, "a refused answer must not write anything"
    row = http.get(f"/api/v1/hitl/{action_id}").json()
    assert row["status"] == "approved"
