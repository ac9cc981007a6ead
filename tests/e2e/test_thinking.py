"""Extended thinking reaching the user, against a real `tokendance serve` whose model is
the real Anthropic adapter talking to the local fake Messages API.

With a thinking budget the run streams `thinking` start, its chunks, then end; the
signed thinking goes back to the model byte for byte (the fake refuses it otherwise);
usage counts the thinking as output; replay reproduces the session. The budget comes
from `TOKENDANCE_THINKING_BUDGET`, a workspace's default or the session's own setting,
and bad values are 400s.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.e2e.chat_helpers import chat, new_session, user
from tests.e2e.client import Server, settled
from tests.e2e.conftest import StartServer
from tests.fakes.anthropic_server import (
    FakeAnthropic,
    RedactedThinking,
    Text,
    Thinking,
    ToolUse,
    Turn,
    serve_fake_anthropic,
)
from tests.fakes.anthropic_thinking import JSONObject

pytestmark = [pytest.mark.e2e]

MODEL = "claude-sonnet-5-5"
# As long and opaque as the API's signatures: sent back, it must be this exact string.
SIGNATURE = "EqQBCkgIARABGAIiQL" + "x7/+Qz9" * 40 + "=="
THOUGHT = "The user wants a plan. I will write one step, then answer."
PLAN: dict[str, object] = {"items": [{"title": "Answer the question", "status": "in_progress"}]}


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with serve_fake_anthropic() as running:
        yield running


def anthropic_env(fake: FakeAnthropic, budget: int | None) -> dict[str, str]:
    env = {"ANTHROPIC_API_KEY": fake.api_key, "ANTHROPIC_BASE_URL": fake.base_url,
           "TOKENDANCE_MODEL": MODEL}  # fmt: skip
    if budget is not None:
        env["TOKENDANCE_THINKING_BUDGET"] = str(budget)
    return env


def assistant_turns(body: JSONObject) -> list[list[JSONObject]]:
    return [m["content"] for m in body["messages"] if m["role"] == "assistant"]


def test_thinking_streams_goes_back_signed_is_counted_and_replays(
    start_server: StartServer, fake: FakeAnthropic
) -> None:
    server = start_server(None, extra_env=anthropic_env(fake, 2048))
    account, http = user(server.client(), "thinker@example.org")
    sid = new_session(http, account["workspace_id"], confirmation="never")["id"]
    fake.plan(
        Turn((Thinking(THOUGHT, SIGNATURE, pieces=3), RedactedThinking("EncryptedBlob=="),
              ToolUse("toolu_01", "update_plan", PLAN)),
             stop_reason="tool_use", output_tokens=300),
        Turn((Thinking("Plan written; answer now.", pieces=2), Text("Here is the answer.")),
             output_tokens=200),
    )  # fmt: skip

    read = chat(http, sid, "Plan and answer", timeout=30)

    # 1. Over SSE: start, the chunks, then the end with the stored turn, for each turn.
    thinking = [(e.data.get("status"), e.data["content"]) for e in read.of("thinking")]
    first = thinking[: thinking.index(("end", "")) + 1]
    assert first[0] == ("start", "") and first[-1] == ("end", ""), thinking
    assert "".join(str(c) for status, c in first[1:-1] if status is None) == THOUGHT
    # Sent as three chunks; a stream a little behind gets waiting chunks joined.
    assert 1 <= len(first) - 2 <= 3, "the thought in chunks between start and end"
    assert [s for s, _ in thinking].count("start") == 2 == [s for s, _ in thinking].count("end")
    events = [(e.event, e.data.get("status")) for e in read.events]
    ends = [i for i, e in enumerate(events) if e == ("thinking", "end")]
    assert all(events[i + 1][0] in ("message", "content") for i in ends), events
    assert "EncryptedBlob" not in str([e.data for e in read.events]), "redacted stays opaque"
    messages = [e.data for e in read.of("message") if e.data["role"] == "assistant"]
    assert messages[0]["thinking"] == THOUGHT

    # 2. The next request carries the thinking back, signature byte for byte, first.
    assert len(fake.bodies) == 2 and fake.unused_replies == 0
    assert all(b["thinking"] == {"type": "enabled", "budget_tokens": 2048} for b in fake.bodies)
    back = assistant_turns(fake.bodies[1])[-1]
    assert back[0] == {"type": "thinking", "thinking": THOUGHT, "signature": SIGNATURE}
    assert back[1] == {"type": "redacted_thinking", "data": "EncryptedBlob=="}
    assert back[2]["type"] == "tool_use"

    # 3. Usage counts the thinking: output tokens are the turns' whole output.
    settled(http)
    usage = http.get(f"/api/v1/sessions/{sid}/usage").json()
    assert usage["totals"]["output_tokens"] == 300 + 200
    assert [c["output_tokens"] for c in usage["calls"]] == [300, 200]

    # 4. Replay of the session decides the same, thinking included.
    replayed = replay(server, sid)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "identically" in replayed.stdout


def replay(server: Server, session_id: object) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOKENDANCE_", "ANTHROPIC_"))}
    env.update(TOKENDANCE_DATABASE_URL=server.database_url, TOKENDANCE_NATS_URL=server.nats_url,
               TOKENDANCE_NATS_STREAM=server.stream, TOKENDANCE_DATA_DIR=str(server.data_dir),
               TOKENDANCE_LOG_LEVEL="WARNING")  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "adapters.cli", "replay", str(session_id)],
        env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip


def test_thinking_budget_from_env_workspace_and_session_and_bad_values(
    start_server: StartServer, fake: FakeAnthropic
) -> None:
    server = start_server(None, extra_env=anthropic_env(fake, 2048))
    account, http = user(server.client(), "settings@example.org")
    workspace = account["workspace_id"]

    def budget_sent(settings: dict[str, object] | None) -> object:
        made = new_session(http, workspace, **(settings or {}))
        fake.plan(Turn((Text("ok"),)))
        chat(http, made["id"], "hi", timeout=30)
        return fake.bodies[-1].get("thinking")

    assert budget_sent(None) == {"type": "enabled", "budget_tokens": 2048}  # the env's
    assert budget_sent({"thinking_budget": 4096}) == {"type": "enabled", "budget_tokens": 4096}
    assert budget_sent({"thinking_budget": 0}) is None  # the session turns it off
    changed = http.patch(
        f"/api/v1/workspaces/{workspace}", json={"settings": {"thinking_budget": 3000}}
    )
    assert changed.status_code == 200, changed.text
    assert changed.json()["settings"]["thinking_budget"] == 3000, changed.text
    assert budget_sent(None) == {"type": "enabled", "budget_tokens": 3000}  # the workspace's
    assert budget_sent({"confirmation": "never"}) == {"type": "enabled", "budget_tokens": 3000}
    assert budget_sent({"thinking_budget": 1024}) == {"type": "enabled", "budget_tokens": 1024}
    made = new_session(http, workspace, thinking_budget=5000)
    shown = http.get(f"/api/v1/sessions/{made['id']}", params={"include_details": "true"})
    assert shown.json()["details"]["settings"]["thinking_budget"] == 5000

    # 0, or 1024 and more below the output limit (TOKENDANCE_MAX_TOKENS, 8192 here).
    for bad in (1, 1023, 8192, 10_000, -1, 2.5, True, "many", 2_000_000):
        body = {"workspace_id": workspace, "settings": {"thinking_budget": bad}}
        refused = http.post("/api/v1/sessions/", json=body)
        assert refused.status_code == 400, (bad, refused.text)
        assert refused.json()["error_code"] == "VALIDATION_ERROR", refused.text
        assert "thinking_budget" in refused.json()["detail"], refused.text
        defaults: dict[str, object] = {"settings": {"thinking_budget": bad}}
        patched = http.patch(f"/api/v1/workspaces/{workspace}", json=defaults)
        assert patched.status_code == 400, (bad, patched.text)
    assert len(fake.bodies) == 6, "no refused setting reached the model"
