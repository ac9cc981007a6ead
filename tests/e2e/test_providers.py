"""Every model provider through a real `tokendance serve`: the real SDK of each vendor
talking to a local fake that speaks its wire format (OpenAI's streaming Chat
Completions, Gemini's streamGenerateContent), a run with two tool calls to `done`, its
usage and cost exact from the price table, and the session replayed identically. Then
the Anthropic fake answers 529 on every try and the fallback model takes the call.
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from adapters.config.price_file import load_prices
from domain.conversation import Usage
from tests.e2e.chat_helpers import audit_log, chat, new_session, user
from tests.e2e.client import settled
from tests.e2e.conftest import StartServer
from tests.e2e.test_thinking import replay
from tests.fakes import gemini_server, openai_server
from tests.fakes.anthropic_server import Text, Turn, overloaded, serve_fake_anthropic

pytestmark = [pytest.mark.e2e]

PLAN: dict[str, object] = {"items": [{"title": "Answer", "status": "in_progress"}]}
NOTE: dict[str, object] = {"text": "planned, now answering"}
ANSWER = "Here is the answer."


def check_usage(http: object, sid: object, billed: list[str]) -> list[dict[str, object]]:
    """The session's calls: each billed to `billed`, cost as the price table says."""
    settled(http)  # type: ignore[arg-type]
    calls: list[dict[str, object]] = http.get(f"/api/v1/sessions/{sid}/usage").json()["calls"]  # type: ignore[attr-defined]
    assert [c["model"] for c in calls] == billed
    prices = load_prices()
    for c in calls:
        usage = Usage(int(c["input_tokens"]), int(c["output_tokens"]),  # type: ignore[call-overload]
                      int(c["cache_read_tokens"]), int(c["cache_write_tokens"]))  # type: ignore[call-overload]  # fmt: skip
        cost = prices.cost(str(c["model"]), usage)
        assert cost.priced and Decimal(str(c["cost_usd"])) == cost.usd.quantize(Decimal("0.000001"))
    return calls


def run_two_tool_calls(
    start_server: StartServer, env: dict[str, str], email: str
) -> tuple[object, object, object]:
    server = start_server(None, extra_env=env)
    account, http = user(server.client(), email)
    sid = new_session(http, account["workspace_id"], confirmation="never")["id"]
    read = chat(http, sid, "Plan, note, then answer", timeout=60)
    assert read.ended and not read.of("error"), [(e.event, e.data) for e in read.events]
    asked = {e.data["name"] for e in read.of("tool_call") if e.data["status"] == "pending"}
    assert asked == {"update_plan", "note_progress"}
    assert [e.data["status"] for e in read.of("tool_result")] == ["success", "success"]
    final = [e.data for e in read.of("message") if e.data["role"] == "assistant"][-1]
    assert final["content"] == ANSWER
    done = read.of("done")[-1].data
    assert done["status"] == "completed", done
    return server, http, sid


def test_an_openai_model_runs_tools_to_done_billed_exactly_and_replays(
    start_server: StartServer,
) -> None:
    with openai_server.serve_fake_openai() as fake:
        fake.plan(
            openai_server.Reply(calls=(openai_server.Call("update_plan", PLAN, "call_plan"),
                                       openai_server.Call("note_progress", NOTE, "call_note")),
                                output_tokens=31),
            openai_server.Reply(text=ANSWER, output_tokens=12),
        )  # fmt: skip
        env = {"OPENAI_API_KEY": fake.api_key, "OPENAI_BASE_URL": fake.base_url,
               "TOKENDANCE_MODEL": "openai:gpt-4.1"}  # fmt: skip
        server, http, sid = run_two_tool_calls(start_server, env, "openai@example.org")

        calls = check_usage(http, sid, ["openai:gpt-4.1-2025-04-14"] * 2)
        assert [c["output_tokens"] for c in calls] == [31, 12]
        assert calls[1]["cache_read_tokens"] > 0  # the second request reused the first's prefix
        # Append-only: each request's messages begin with the previous request's, byte for
        # byte, all but the plan recited at the very end (it moves on every step).
        first, second = (json.loads(r.raw)["messages"] for r in fake.requests)
        stable = first[:-1] if str(first[-1]["content"]).startswith("[Current plan") else first
        assert json.dumps(second[: len(stable)]) == json.dumps(stable)
        added = [m["role"] for m in second[len(stable) :]]
        assert added == ["assistant", "tool", "tool", "user"]
        assert second[-1]["content"].startswith("[Current plan: 0/1 done]")

        replayed = replay(server, sid)  # type: ignore[arg-type]
        assert replayed.returncode == 0, replayed.stdout + replayed.stderr
        assert "identically" in replayed.stdout


def test_a_gemini_model_runs_tools_to_done_billed_exactly_and_replays(
    start_server: StartServer,
) -> None:
    with gemini_server.serve_fake_gemini() as fake:
        fake.plan(
            gemini_server.Reply(calls=(gemini_server.Call("update_plan", PLAN),
                                       gemini_server.Call("note_progress", NOTE)),
                                output_tokens=29),
            gemini_server.Reply(text=ANSWER, output_tokens=11),
        )  # fmt: skip
        env = {"GEMINI_API_KEY": fake.api_key, "GOOGLE_GEMINI_BASE_URL": fake.base_url,
               "TOKENDANCE_MODEL": "gemini:gemini-2.5-pro"}  # fmt: skip
        server, http, sid = run_two_tool_calls(start_server, env, "gemini@example.org")

        calls = check_usage(http, sid, ["gemini:gemini-2.5-pro-001"] * 2)
        assert [c["output_tokens"] for c in calls] == [29, 11]
        assert calls[1]["cache_read_tokens"] > 0

        replayed = replay(server, sid)  # type: ignore[arg-type]
        assert replayed.returncode == 0, replayed.stdout + replayed.stderr
        assert "identically" in replayed.stdout


def test_an_overloaded_anthropic_falls_back_to_the_next_provider(
    start_server: StartServer,
) -> None:
    with serve_fake_anthropic() as anthropic, openai_server.serve_fake_openai() as openai:
        env = {"ANTHROPIC_API_KEY": anthropic.api_key, "ANTHROPIC_BASE_URL": anthropic.base_url,
               "OPENAI_API_KEY": openai.api_key, "OPENAI_BASE_URL": openai.base_url,
               "TOKENDANCE_MODEL": "anthropic:claude-sonnet-4-5",
               "TOKENDANCE_MODEL_FALLBACK": "openai:gpt-4.1"}  # fmt: skip
        server = start_server(None, extra_env=env)
        account, http = user(server.client(), "fallback@example.org")
        sid = new_session(http, account["workspace_id"], confirmation="never")["id"]

        anthropic.plan(Turn((Text("Anthropic here."),)))
        assert chat(http, sid, "first", timeout=60).of("done")[-1].data["status"] == "completed"

        # 529 on the first try and on all four retries: the fallback takes the call.
        anthropic.plan(*[overloaded() for _ in range(5)])
        openai.plan(openai_server.Reply(text="OpenAI here.", output_tokens=5))
        read = chat(http, sid, "second", timeout=90)
        assert read.of("done")[-1].data["status"] == "completed"
        notices = [e.data for e in read.of("notice") if e.data["kind"] == "fallback"]
        assert len(notices) == 1, [(e.event, e.data) for e in read.events]
        fallback = notices[0]["fallback"]
        assert fallback["from_model"] == "anthropic:claude-sonnet-4-5"
        assert fallback["to_model"] == "openai:gpt-4.1"
        assert fallback["error_code"] == "LLM_OVERLOADED"
        answers = [e.data["content"] for e in read.of("message") if e.data["role"] == "assistant"]
        assert answers[-1] == "OpenAI here."
        assert anthropic.unused_replies == 0 and len(openai.requests) == 1

        kinds = [e["type"] for e in audit_log(http, sid)]
        assert kinds.count("ModelFallbackUsed") == 1
        check_usage(http, sid, ["claude-sonnet-4-5", "openai:gpt-4.1-2025-04-14"])

        replayed = replay(server, sid)
        assert replayed.returncode == 0, replayed.stdout + replayed.stderr
        assert "identically" in replayed.stdout
