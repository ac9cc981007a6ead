from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from adapters.bootstrap.parts import announce_model, build_llm
from adapters.config.settings import Settings
from adapters.llm.router import ModelRouter
from adapters.llm.scripted import ScriptedLLM, ScriptError, load_llm_spec
from adapters.llm.unconfigured import UnconfiguredLLM
from application.ports import LLMError
from domain.conversation import (
    SESSION_KEY,
    Message,
    ModelRequest,
    ModelTurn,
    StreamItem,
    TextBlock,
    TextDelta,
    ThinkingDelta,
    ToolUseBlock,
    Usage,
)

DEMO = Path(__file__).parents[2] / "adapters" / "llm" / "scripts" / "demo.yaml"

TOOL_SCRIPT = """\
model: scripted-test
turns:
  - thinking: Plan first, then look things up.
    text: Let me record a plan.
    tool_calls:
      - name: update_plan
        input: {items: [{title: Read sources, status: in_progress}]}
      - name: note_progress
        input: {text: started}
        id: toolu_fixed
  - text: All done here.
    usage: {input: 10, output: 3, cache_read: 7, cache_write: 2}
"""


def request(text: str = "hi") -> ModelRequest:
    return ModelRequest(
        system="You are a test.",
        tools=(),
        messages=(Message("user", (TextBlock(text),)),),
    )


async def collect(llm: ScriptedLLM, req: ModelRequest | None = None) -> list[StreamItem]:
    return [item async for item in llm.stream(req or request())]


async def final_turn(llm: ScriptedLLM, req: ModelRequest | None = None) -> ModelTurn:
    items = await collect(llm, req)
    assert isinstance(items[-1], ModelTurn)
    assert not any(isinstance(i, ModelTurn) for i in items[:-1])
    return items[-1]


async def test_yaml_tool_calls_become_tool_use_blocks_with_tool_use_stop(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(TOOL_SCRIPT)
    llm = ScriptedLLM.from_yaml(path)

    turn = await final_turn(llm)

    assert turn.model == "scripted-test"
    assert turn.stop_reason == "tool_use"
    assert turn.thinking == "Plan first, then look things up."
    assert turn.text == "Let me record a plan."
    assert turn.tool_uses == (
        ToolUseBlock(
            "toolu_scripted_0001",
            "update_plan",
            {"items": [{"title": "Read sources", "status": "in_progress"}]},
        ),
        ToolUseBlock("toolu_fixed", "note_progress", {"text": "started"}),
    )
    second = await final_turn(llm)
    assert second.stop_reason == "end_turn"
    assert second.usage == Usage(10, 3, 7, 2)


async def test_text_and_thinking_stream_in_word_chunks_that_join_back(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(TOOL_SCRIPT)
    items = await collect(ScriptedLLM.from_yaml(path))

    thinking = [i.thinking for i in items if isinstance(i, ThinkingDelta)]
    text = [i.text for i in items if isinstance(i, TextDelta)]
    assert len(thinking) > 1 and len(text) > 1
    assert "".join(thinking) == "Plan first, then look things up."
    assert "".join(text) == "Let me record a plan."
    # Thinking comes before text, as with a real model.
    first_text = next(n for n, i in enumerate(items) if isinstance(i, TextDelta))
    assert all(not isinstance(i, ThinkingDelta) for i in items[first_text:])


async def play_to_the_end(llm: ScriptedLLM) -> list[list[StreamItem]]:
    runs: list[list[StreamItem]] = []
    while True:
        try:
            runs.append(await collect(llm))
        except LLMError:
            return runs


async def test_demo_script_plays_identically_twice() -> None:
    first = await play_to_the_end(ScriptedLLM.from_yaml(DEMO))
    second = await play_to_the_end(ScriptedLLM.from_yaml(DEMO))

    assert first == second
    turns = [run[-1] for run in first]
    assert 5 <= len(turns) <= 6
    assert all(isinstance(t, ModelTurn) for t in turns)
    names = {u.name for t in turns if isinstance(t, ModelTurn) for u in t.tool_uses}
    assert names == {"update_plan", "record_finding", "note_progress"}
    last = turns[-1]
    assert isinstance(last, ModelTurn) and last.stop_reason == "end_turn" and last.text


async def test_running_out_of_turns_raises_non_retryable_llm_error() -> None:
    llm = ScriptedLLM.from_turns([{"text": "only one"}])
    await final_turn(llm)

    with pytest.raises(LLMError, match="no more turns") as caught:
        await collect(llm)
    assert caught.value.retryable is False


async def test_requests_are_recorded_in_order() -> None:
    llm = ScriptedLLM.from_turns([{"text": "a"}, {"text": "b"}])
    await collect(llm, request("first"))
    await collect(llm, request("second"))

    assert [r.messages[0].content for r in llm.requests] == [
        (TextBlock("first"),),
        (TextBlock("second"),),
    ]


async def test_missing_usage_is_estimated_from_request_and_output() -> None:
    llm = ScriptedLLM.from_turns([{"text": "x" * 40}, {"text": "x" * 40}])
    short = await final_turn(llm, request("short"))
    long = await final_turn(llm, request("long " * 200))

    assert short.usage.output_tokens == 10  # 40 characters at 4 per token
    assert 0 < short.usage.input_tokens < long.usage.input_tokens


async def test_function_driven_model_sees_the_request_sync_and_async() -> None:
    def echo(req: ModelRequest) -> dict[str, object]:
        said = req.messages[-1].content[0]
        assert isinstance(said, TextBlock)
        return {"text": f"you said {said.text}", "tool_calls": [{"name": "t", "input": {}}]}

    async def fixed(req: ModelRequest) -> ModelTurn:
        return ModelTurn((TextBlock("ready"),), "end_turn", Usage(1, 1), "fn-model")

    sync_turn = await final_turn(ScriptedLLM(echo), request("ping"))
    async_turn = await final_turn(ScriptedLLM(fixed))

    assert sync_turn.text == "you said ping"
    assert sync_turn.tool_uses == (ToolUseBlock("toolu_scripted_0001", "t", {}),)
    assert sync_turn.stop_reason == "tool_use"
    assert async_turn == ModelTurn((TextBlock("ready"),), "end_turn", Usage(1, 1), "fn-model")


async def test_function_returning_a_bad_turn_raises_llm_error() -> None:
    llm = ScriptedLLM(lambda req: {"txt": "typo"})

    with pytest.raises(LLMError, match="txt"):
        await collect(llm)


@pytest.mark.parametrize(
    ("turns", "message"),
    [
        ("- text: ok\n- 42\n", r"turns\[1\]: expected a mapping"),
        ("- text: ok\n- {text: ok, colour: red}\n", r"turns\[1\]: unknown key"),
        ("- text: ok\n- {text: ok, stop_reason: done}\n", r"turns\[1\]\.stop_reason"),
        ("- {tool_calls: [{input: {}}]}\n", r"turns\[0\]\.tool_calls\[0\]\.name"),
        ("- text: ok\n- {text: ok, usage: {input: -1}}\n", r"turns\[1\]\.usage\.input"),
        ("- {text: ok, delay: soon}\n", r"turns\[0\]\.delay"),
        ("- {text: ok, pace: -1}\n", r"turns\[0\]\.pace"),
        ("- {}\n", r"turns\[0\]: a turn needs"),
        ("model: m\n", r"expected a list of turns"),
        ("- text: ok\n- text: [unclosed\n", r"invalid YAML"),
    ],
)
def test_bad_yaml_is_rejected_naming_the_file_line_and_turn(
    tmp_path: Path, turns: str, message: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(turns)

    with pytest.raises(ScriptError, match=message) as caught:
        ScriptedLLM.from_yaml(path)
    # The line of the turn at fault: the last one, except for the two one-line scripts.
    line = 1 if turns.startswith(("- {", "model")) else turns.count("\n")
    assert str(caught.value).startswith(f"{path}:{line}: ")


def test_the_line_named_is_that_of_the_field_at_fault(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("model: m\nturns:\n  - text: ok\n  - text: fine\n    usage:\n      input: -1\n")
    with pytest.raises(ScriptError) as caught:
        load_llm_spec(f"scripted:{path}")
    assert str(caught.value).startswith(f"{path}:6: turns[1].usage.input: ")


def for_session(session: str, text: str = "hi") -> ModelRequest:
    return dataclasses.replace(request(text), metadata={SESSION_KEY: session})


async def test_each_session_plays_the_script_from_its_own_position() -> None:
    llm = ScriptedLLM.from_turns(
        [{"text": "one", "tool_calls": [{"name": "t", "input": {}}]}, {"text": "two"}]
    )
    a1, b1 = await final_turn(llm, for_session("a")), await final_turn(llm, for_session("b"))
    a2, b2 = await final_turn(llm, for_session("a")), await final_turn(llm, for_session("b"))
    assert [t.text for t in (a1, b1, a2, b2)] == ["one", "one", "two", "two"]
    # Generated tool ids count per session too: the same script gives the same ids.
    assert a1.tool_uses == b1.tool_uses == (ToolUseBlock("toolu_scripted_0001", "t", {}),)
    with pytest.raises(LLMError, match="no more turns"):
        await collect(llm, for_session("a"))


async def test_a_served_script_starts_again_with_fresh_fixed_ids(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(TOOL_SCRIPT)
    llm = load_llm_spec(f"scripted:{path}")  # as `serve` loads it: repeating
    laps = [[await final_turn(llm, for_session("a")) for _ in range(2)] for _ in range(3)]
    assert [t.text for lap in laps for t in lap] == ["Let me record a plan.", "All done here."] * 3
    fixed = [lap[0].tool_uses[1].id for lap in laps]
    assert fixed == ["toolu_fixed", "toolu_fixed_2", "toolu_fixed_3"]
    generated = {lap[0].tool_uses[0].id for lap in laps}
    assert len(generated) == 3  # unique in the session


async def test_the_demo_script_serves_many_sessions_at_once() -> None:
    llm = load_llm_spec("scripted:demo")

    async def chat(session: str) -> list[ModelTurn]:
        turns = [await final_turn(llm, for_session(session))]
        while turns[-1].stop_reason != "end_turn":
            turns.append(await final_turn(llm, for_session(session)))
        return turns

    runs = await asyncio.gather(*(chat(f"s{i % 10}") for i in range(20)))
    assert all(run[-1].text.startswith("Yes: modern cold-climate heat pumps") for run in runs)


async def test_delayed_turn_cancels_cleanly() -> None:
    llm = ScriptedLLM.from_turns([{"text": "too slow", "delay": 3600}, {"text": "next"}])
    received: list[StreamItem] = []

    async def consume() -> None:
        async for item in llm.stream(request()):
            received.append(item)

    task = asyncio.create_task(consume())
    for _ in range(5):
        await asyncio.sleep(0)
    assert len(llm.requests) == 1 and received == []  # started, held by the delay

    task.cancel()
    for _ in range(5):  # a few loop iterations, not a clock: cancelling must not wait
        await asyncio.sleep(0)

    assert task.done()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert received == []
    # The cancelled call used its turn; the model keeps working afterwards.
    assert (await final_turn(llm)).text == "next"


async def test_a_paced_turn_waits_between_its_chunks() -> None:
    llm = ScriptedLLM.from_turns([{"text": "one two three", "pace": 3600}])
    received: list[StreamItem] = []

    async def consume() -> None:
        async for item in llm.stream(request()):
            received.append(item)

    task = asyncio.create_task(consume())
    for _ in range(5):  # loop iterations, not a clock: the pace holds the second chunk
        await asyncio.sleep(0)
    assert received == [TextDelta("one ")]
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_concurrent_calls_get_distinct_turns_in_call_order() -> None:
    llm = ScriptedLLM.from_turns([{"text": "one", "delay": 0.01}, {"text": "two"}])
    slow, fast = await asyncio.gather(final_turn(llm), final_turn(llm))

    assert (slow.text, fast.text) == ("one", "two")


def test_load_llm_spec_reads_a_scripted_path() -> None:
    llm = load_llm_spec(f"scripted:{DEMO}")

    assert llm.model == "scripted-demo"


@pytest.mark.parametrize("spec", ["", "anthropic", "openai:gpt", "scripted:", "scripted:  "])
def test_load_llm_spec_rejects_what_it_cannot_parse(spec: str) -> None:
    with pytest.raises(ValueError, match="TOKENDANCE_LLM"):
        load_llm_spec(spec)


def test_load_llm_spec_reports_a_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot read script"):
        load_llm_spec(f"scripted:{tmp_path / 'nope.yaml'}")


def test_with_no_model_configured_one_log_line_says_what_to_set(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    llm = build_llm(Settings(data_dir=tmp_path))
    assert isinstance(llm, ModelRouter) and isinstance(llm.provider("anthropic"), UnconfiguredLLM)
    with caplog.at_level(logging.WARNING):
        announce_model(Settings(data_dir=tmp_path))  # as `serve` does at start
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("model: none")]
    assert len(said) == 1 and "\n" not in said[0]
    assert "ANTHROPIC_API_KEY" in said[0] and "TOKENDANCE_LLM=scripted:demo" in said[0]


def test_a_malformed_script_is_refused_at_start_naming_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("- text: ok\n- {text: ok, colour: red}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOKENDANCE_", "ANTHROPIC_"))}
    refused = subprocess.run(
        [sys.executable, "-m", "adapters.cli", "--data-dir", str(tmp_path / "data"), "serve"],
        env={**env, "TOKENDANCE_LLM": f"scripted:{path}"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 1
    assert f"{path}:2: turns[1]: unknown key(s) ['colour']" in refused.stderr
    assert not (tmp_path / "data").exists()  # refused before any server started
