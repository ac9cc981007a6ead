"""Stopping a run over HTTP against a real `tokendance serve`: in the middle of a slow
model turn, and while the run waits for an approval."""

from __future__ import annotations

import pytest

from tests.e2e.chat_helpers import (
    QUESTION,
    audit_log,
    chat,
    follow,
    new_session,
    stored_types,
    user,
)
from tests.e2e.client import assert_error, read_sse, settled, wait_until
from tests.e2e.conftest import StartServer

pytestmark = [pytest.mark.e2e]


def test_stop_during_a_slow_model_turn_answers_at_once_and_the_stream_says_stopped(
    start_server: StartServer,
) -> None:
    server = start_server("slow")
    account, http = user(server.client(), "sam@example.com")
    sid = new_session(http, account["workspace_id"])["id"]

    started = read_sse(
        http,
        "POST",
        f"/api/v1/chat/{sid}/message",
        json={"content": "take your time"},
        until=lambda e: e.event == "run" and e.data.get("status") == "started",
        timeout=10,
    )
    assert started.status == 200, started.body

    # "At once" is shown by the log, not a clock: the stop cut the 5 s turn short, so
    # no assistant turn is recorded before RunStopped (asserted below).
    stopped = http.post(f"/api/v1/chat/{sid}/stop")
    assert stopped.status_code == 200, stopped.text
    assert stopped.json()["status"] == "stopped" and stopped.json()["session_id"] == sid

    rest = follow(http, sid, started.ids[-1], timeout=10)
    assert stored_types(rest.events) == ["done"], stored_types(rest.events)
    assert rest.events[-1].data["status"] == "stopped"
    assert rest.events[-1].id == stopped.json()["version"]
    assert not rest.of("content"), "nothing of the stopped turn may reach the client"

    types = [e["type"] for e in audit_log(http, sid)]
    assert types[-1] == "RunStopped" and "AssistantTurnRecorded" not in types
    summary = wait_until(
        lambda: (s := http.get(f"/api/v1/sessions/{sid}").json())["status"] == "stopped" and s
    )
    assert isinstance(summary, dict) and summary["active_run_id"] is None
    again = http.post(f"/api/v1/chat/{sid}/stop")
    assert_error(again, 409)
    settled(http)
    assert [e["type"] for e in audit_log(http, sid)] == types, "a second stop wrote nothing"


def test_stop_while_waiting_for_approval_interrupts_the_call(start_server: StartServer) -> None:
    server = start_server("one_tool")
    account, http = user(server.client(), "sue@example.com")
    sid = new_session(http, account["workspace_id"], confirmation="always")["id"]
    first = chat(http, sid, "Note your progress", timeout=15, until=QUESTION)
    assert first.events[-1].event == "confirm_required"
    action_id = first.events[-1].data["action_id"]

    stopped = http.post(f"/api/v1/chat/{sid}/stop")
    assert stopped.status_code == 200, stopped.text
    rest = follow(http, sid, first.ids[-1], timeout=10)
    assert stored_types(rest.events) == ["tool_result", "done"]
    interrupted = rest.of("tool_result")[0].data
    assert (interrupted["status"], interrupted["outcome"]) == ("cancelled", "interrupted")
    assert rest.events[-1].data["status"] == "stopped"
    wait_until(lambda: http.get(f"/api/v1/sessions/{sid}/hitl/pending").json() == [])
    late = http.post(
        f"/api/v1/chat/{sid}/confirm", json={"action_id": action_id, "confirmed": True}
    )
    assert_error(late, (404, 409))
