from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from adapters.llm.scripted import ScriptedLLM, ScriptError, load_llm_spec
from application.ports import LLMError
from domain.conversation import (
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
        ("- {}\n", r"turns\[0\]: a turn needs"),
        ("model: m\n", r"expected a list of turns"),
        ("- text: [unclosed\n", r"invalid YAML"),
    ],
)
def test_bad_yaml_is_rejected_naming_the_turn(tmp_path: Path, turns: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(turns)

    with pytest.raises(ScriptError, match=message) as caught:
        ScriptedLLM.from_yaml(path)
    assert str(path) in str(caught.value)


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
