"""`TOKENDANCE_LLM=scripted:demo` answers every chat of every session, concurrently too."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from tests.e2e.client import is_event, read_sse, sign_up
from tests.e2e.conftest import StartServer

pytestmark = [pytest.mark.e2e]

SESSIONS = 10
CHATS_PER_SESSION = 2


def test_twenty_concurrent_chats_over_ten_sessions_all_end_in_done(
    start_server: StartServer,
) -> None:
    server = start_server(extra_env={"TOKENDANCE_LLM": "scripted:demo"})
    account = sign_up(server.client(), "demo@example.com")
    token, workspace = str(account["access_token"]), str(account["workspace_id"])

    def session_chats(n: int) -> list[tuple[str, str]]:
        """One session, its chats one after another (a session runs one run at a time)."""
        with server.client(token) as http:
            created = http.post(
                "/api/v1/sessions", json={"workspace_id": workspace, "title": f"demo {n}"}
            )
            assert created.status_code == 201, created.text
            sid = created.json()["id"]
            return [
                chat(http, sid, f"question {i} of session {n}") for i in range(CHATS_PER_SESSION)
            ]

    with ThreadPoolExecutor(SESSIONS) as pool:
        ends = [end for chats in pool.map(session_chats, range(SESSIONS)) for end in chats]
    assert len(ends) == SESSIONS * CHATS_PER_SESSION
    assert all(end[:2] == ("done", "completed") for end in ends), ends
    # Every run played the whole script, in order: no session took another's turns.
    assert {end[2] for end in ends} == {DEMO_TOOLS}, {end[2] for end in ends}


DEMO_TOOLS = (
    "update_plan", "record_finding", "note_progress", "update_plan", "record_finding",
    "update_plan", "note_progress",
)  # fmt: skip


def chat(http: httpx.Client, sid: str, text: str) -> tuple[str, str, tuple[str, ...]]:
    """(type, status) of the event the chat's stream ends with, and the tools it called."""
    read = read_sse(
        http,
        "POST",
        f"/api/v1/chat/{sid}/message",
        json={"content": text},
        until=is_event("done", "error"),
        timeout=60,
    )
    assert read.status == 200, read.body
    last = read.events[-1]
    # The calls requested (stored); each is also seen `running`, live, once it runs.
    tools = tuple(str(e.data["name"]) for e in read.of("tool_call") if e.id is not None)
    return last.event, str(last.data.get("status") or last.data.get("error_code")), tools
