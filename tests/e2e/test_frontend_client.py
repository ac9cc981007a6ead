"""A client built only from the product's frontend SSE types renders a whole run.

It knows `thinking`, `tool_call`, `tool_result`, `content`, `confirm_required`,
`done` and `error` with the fields of seeds/002 section 5, and ignores every other
type, as that frontend does. Over HTTP/SSE against a real server, it follows a run
on its chat stream, held open through an approval another client gives, and shows the
answer exactly once; `done` names the last
assistant message and the tokens the run used.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import httpx
import pytest

from tests.e2e.client import SseEvent, read_sse, sign_up, wait_until
from tests.e2e.conftest import StartServer

pytestmark = [pytest.mark.e2e]

FIRST = "I will note my progress."
ANSWER = "Here is the answer: heat pumps move heat."


@dataclass
class FrontendView:
    """What the seed's frontend shows: text, thinking, tool calls and their state."""

    text: str = ""
    thinking: str = ""
    tools: dict[str, str] = field(default_factory=dict)  # tool call id -> status
    question: dict[str, object] | None = None
    done: dict[str, object] | None = None
    error: dict[str, object] | None = None
    last_id: int = 0

    def handle(self, e: SseEvent) -> None:
        if e.id is not None:
            self.last_id = e.id
        d = e.data
        if e.event == "thinking":
            self.thinking += str(d["content"])
        elif e.event == "content":
            self.text += str(d["content"])
        elif e.event == "tool_call":
            assert d["status"] in ("pending", "running") and d["name"]
            self.tools[str(d["id"])] = str(d["status"])
        elif e.event == "tool_result":
            assert d["status"] in ("success", "error", "cancelled")
            self.tools[str(d["id"])] = str(d["status"])
        elif e.event == "confirm_required":
            self.question = {k: d[k] for k in ("action_id", "tool", "args", "description")}
        elif e.event == "done":
            self.done = {k: d[k] for k in ("status", "message_id", "tokens_used")}
        elif e.event == "error":
            self.error = {k: d[k] for k in ("message", "error_code")}
        # any other type: not the frontend's, ignored


def ends(view: FrontendView) -> object:
    def until(e: SseEvent) -> bool:
        view.handle(e)
        return e.event in ("done", "error")

    return until


def test_a_frontend_client_renders_a_run_with_an_approval_showing_the_answer_once(
    start_server: StartServer,
) -> None:
    server = start_server("frontend")
    account = sign_up(server.client(), "front@example.com")
    http = server.client(str(account["access_token"]))
    created = http.post(
        "/api/v1/sessions/",
        json={"workspace_id": account["workspace_id"], "settings": {"confirmation": "always"}},
    )
    assert created.status_code == 201, created.text
    sid = created.json()["id"]
    view = FrontendView()

    # The chat stream stays open across the approval, which another client gives.
    with ThreadPoolExecutor(1) as pool, server.client(str(account["access_token"])) as other:
        chat = pool.submit(
            read_sse, http, "POST", f"/api/v1/chat/{sid}/message",
            json={"content": "Heat pumps?"}, until=ends(view), timeout=30,
        )  # fmt: skip
        wait_until(lambda: view.question is not None or chat.done(), timeout=20)
        assert view.question is not None, chat.result().events
        assert view.question["tool"] == "note_progress" and view.tools == {"toolu_note": "pending"}
        confirmed = other.post(
            f"/api/v1/chat/{sid}/confirm",
            json={"action_id": view.question["action_id"], "confirmed": True},
        )
        assert confirmed.status_code == 200, confirmed.text
        assert confirmed.json()["status"] == "confirmed" and confirmed.json()["next_action"]
        read = chat.result()
    assert read.of("confirm_required") and read.of("tool_result") and read.of("done")

    assert view.error is None and view.done is not None
    assert view.text == FIRST + ANSWER, view.text
    assert view.text.count(ANSWER) == 1
    assert view.thinking == "Note progress first." + "Now answer."
    assert view.tools == {"toolu_note": "success"}
    assert view.done["status"] == "completed"

    messages = http.get(f"/api/v1/sessions/{sid}/messages").json()["items"]
    assistant = [m for m in messages if m["role"] == "assistant"]
    assert [m["content"] for m in assistant] == [FIRST, ANSWER]
    assert view.done["message_id"] == assistant[-1]["id"]
    assert view.done["tokens_used"] == run_tokens(http, sid) > 0


def run_tokens(http: httpx.Client, sid: object) -> int:
    """Input (cache reads and writes included) plus output tokens of the session's turns."""
    page = http.get(
        f"/api/v1/sessions/{sid}/events", params={"type": "AssistantTurnRecorded"}
    ).json()
    kinds = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")
    return sum(int(item["payload"][k]) for item in page["items"] for k in kinds)
