"""The OpenAI adapter with the real `openai` SDK against the local fake OpenAI API."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator

import openai
import pytest

from adapters.llm.openai import OpenAILLM
from adapters.llm.openai_wire import TurnBuilder, to_chat
from adapters.llm.retries import ModelRequestsForbidden
from application.ports import (
    LLMBadRequest,
    LLMConnectionError,
    LLMContextTooLong,
    LLMNotConfigured,
    LLMOverloaded,
    LLMRateLimited,
    LLMRefused,
)
from domain.conversation import (
    Message,
    ModelRequest,
    ModelTurn,
    SearchResultBlock,
    StreamItem,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
    Usage,
)
from tests.fakes.openai_server import Call, Failure, FakeOpenAI, Reply, serve_fake_openai

SEARCH = ToolSpec(
    "search", "Search the web.", {"type": "object", "properties": {"query": {"type": "string"}}}
)
SYSTEM = "You are a careful agent. " * 20
LONG = "This model's maximum context length is 128000 tokens"


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with serve_fake_openai() as running:
        yield running


def llm_on(fake: FakeOpenAI, api: str = "chat", sleeps: Sleeps | None = None) -> OpenAILLM:
    client = openai.AsyncOpenAI(api_key=fake.api_key, base_url=fake.base_url)
    return OpenAILLM(client, model="gpt-4.1", max_tokens=256, api=api,  # type: ignore[arg-type]
                     sleep=sleeps or Sleeps())  # fmt: skip


def ask(*messages: Message) -> ModelRequest:
    return ModelRequest(SYSTEM, (SEARCH,), messages or (Message("user", (TextBlock("Hi"),)),))


async def items_of(llm: OpenAILLM, request: ModelRequest) -> list[StreamItem]:
    return [item async for item in llm.stream(request)]


async def test_a_text_turn_streams_and_reports_its_model_and_exact_usage(
    fake: FakeOpenAI,
) -> None:
    fake.plan(Reply(text="Hello there, friend", pieces=3, output_tokens=7))
    items = await items_of(llm_on(fake), ask())
    turn = items[-1]
    assert isinstance(turn, ModelTurn)
    deltas = [i.text for i in items if isinstance(i, TextDelta)]
    assert len(deltas) == 3 and "".join(deltas) == turn.text == "Hello there, friend"
    assert turn.model == "gpt-4.1-2025-04-14" and turn.stop_reason == "end_turn"
    body = fake.bodies[0]
    prompt = len(json.dumps(body, ensure_ascii=False)) // 4
    assert turn.usage == Usage(input_tokens=prompt, output_tokens=7)  # nothing cached yet
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["messages"][0] == {"role": "system", "content": SYSTEM}


async def test_two_tool_calls_in_one_turn_and_their_results_sent_back_in_order(
    fake: FakeOpenAI,
) -> None:
    calls = (Call("search", {"query": "a"}, "call_a"), Call("search", {"query": "b"}, "call_b"))
    fake.plan(Reply(calls=calls), Reply(text="Both found."))
    llm = llm_on(fake)
    first = (await items_of(llm, ask()))[-1]
    assert isinstance(first, ModelTurn) and first.stop_reason == "tool_use"
    assert first.tool_uses == (
        ToolUseBlock("call_a", "search", {"query": "a"}),
        ToolUseBlock("call_b", "search", {"query": "b"}),
    )
    history = (
        Message("user", (TextBlock("Hi"),)),
        Message("assistant", first.content),
        Message("user", (ToolResultBlock("call_a", "A!"), ToolResultBlock("call_b", "B?", True))),
    )
    second = (await items_of(llm, ask(*history)))[-1]
    assert isinstance(second, ModelTurn) and second.text == "Both found."
    sent = fake.bodies[1]["messages"]
    assert sent[2]["tool_calls"][1] == {
        "id": "call_b", "type": "function",
        "function": {"name": "search", "arguments": '{"query":"b"}'},
    }  # fmt: skip
    assert sent[3:] == [
        {"role": "tool", "tool_call_id": "call_a", "content": "A!"},
        {"role": "tool", "tool_call_id": "call_b", "content": "Error: B?"},
    ]


async def test_each_request_begins_with_the_previous_one_byte_for_byte(fake: FakeOpenAI) -> None:
    fake.default = Reply(calls=(Call("search", {"query": "more", "deep": True}),))
    llm = llm_on(fake)
    history: tuple[Message, ...] = (Message("user", (TextBlock("Research this"),)),)
    turns = []
    for step in range(3):
        turn = (await items_of(llm, ask(*history)))[-1]
        assert isinstance(turn, ModelTurn)
        turns.append(turn)
        use = turn.tool_uses[0]
        # A thinking block of another vendor's is in the log: it is never sent.
        content = (ThinkingBlock("hmm", "sig-anthropic"), *turn.content)
        history = (*history, Message("assistant", content),
                   Message("user", (ToolResultBlock(use.id, f"result {step}"),)))  # fmt: skip
    for turn, body in zip(turns, fake.bodies, strict=True):
        prompt = len(json.dumps(body, ensure_ascii=False)) // 4  # what the fake counts
        assert turn.usage.input_tokens + turn.usage.cache_read_tokens == prompt
    raws = [json.loads(r.raw) for r in fake.requests]
    for before, after in itertools.pairwise(raws):
        n = len(before["messages"])
        assert json.dumps(after["messages"][:n]) == json.dumps(before["messages"])
        assert json.dumps(after["tools"]) == json.dumps(before["tools"])
    bodies = [r.raw for r in fake.requests]
    prefix = bodies[0][: bodies[0].index(b'"messages"')]
    assert all(b.startswith(prefix) for b in bodies)  # model, tools: the same bytes
    assert turns[0].usage.cache_read_tokens == 0
    assert all(t.usage.cache_read_tokens > 0 for t in turns[1:])
    assert all("hmm" not in r.raw.decode() for r in fake.requests)


async def test_reasoning_streams_as_thinking(fake: FakeOpenAI) -> None:
    fake.plan(Reply(text="42", reasoning="Let me think it through."))
    items = await items_of(llm_on(fake), ask())
    kinds = [type(i).__name__ for i in items]
    assert kinds[0] == "ThinkingStarted" and "ThinkingDelta" in kinds
    turn = items[-1]
    assert isinstance(turn, ModelTurn) and turn.thinking == "Let me think it through."


async def test_rate_limits_are_retried_after_the_wait_the_server_asks(fake: FakeOpenAI) -> None:
    fake.plan(Failure(429, "rate_limit_exceeded", "slow down", retry_after=3), Reply(text="ok"))
    sleeps = Sleeps()
    turn = (await items_of(llm_on(fake, sleeps=sleeps), ask()))[-1]
    assert isinstance(turn, ModelTurn) and turn.text == "ok" and sleeps.delays == [3.0]


@pytest.mark.parametrize("status", [529, 503])
async def test_an_overloaded_server_fails_as_overloaded_after_the_retries(
    fake: FakeOpenAI, status: int
) -> None:
    fake.default = Failure(status, "overloaded", "Overloaded")
    sleeps = Sleeps()
    with pytest.raises(LLMOverloaded, match=str(status)) as caught:
        await items_of(llm_on(fake, sleeps=sleeps), ask())
    assert caught.value.retryable and len(fake.requests) == 5 and len(sleeps.delays) == 4


@pytest.mark.parametrize(
    ("failure", "error", "said"),
    [
        (Failure(401, "invalid_api_key", "Incorrect API key"), LLMNotConfigured, "API key"),
        (
            Failure(
                400,
                "context_length_exceeded",
                "This model's maximum context length is 128000 tokens",
            ),
            LLMContextTooLong,
            "maximum context length",
        ),
        (
            Failure(400, "content_policy_violation", "Your request was rejected"),
            LLMRefused,
            "rejected",
        ),
        (Failure(400, "invalid_value", "bad value"), LLMBadRequest, "bad value"),
    ],
)
async def test_refusals_are_not_retried_and_say_why(
    fake: FakeOpenAI, failure: Failure, error: type[Exception], said: str
) -> None:
    fake.plan(failure)
    with pytest.raises(error, match=said):
        await items_of(llm_on(fake), ask())
    assert len(fake.requests) == 1


async def test_a_model_the_server_does_not_have_is_a_bad_request_naming_it(
    fake: FakeOpenAI,
) -> None:
    request = ModelRequest("", (), (Message("user", (TextBlock("Hi"),)),), model="gpt-9")
    with pytest.raises(LLMBadRequest, match="gpt-9"):
        await items_of(llm_on(fake), request)


async def test_an_error_sent_inside_the_stream_is_classified(fake: FakeOpenAI) -> None:
    fake.plan(Failure(200, "rate_limit_exceeded", "too many", in_stream=True), Reply(text="ok"))
    turn = (await items_of(llm_on(fake), ask()))[-1]
    assert isinstance(turn, ModelTurn) and turn.text == "ok" and len(fake.requests) == 2


async def test_a_stream_cut_off_is_retried_before_a_delta_and_raised_after(
    fake: FakeOpenAI,
) -> None:
    fake.plan(Reply(text="never", cut_after=1), Reply(text="whole"))
    turn = (await items_of(llm_on(fake), ask()))[-1]
    assert isinstance(turn, ModelTurn) and turn.text == "whole"

    fake.plan(Reply(text="half an answer", pieces=2, cut_after=2))
    with pytest.raises(LLMConnectionError, match="part of the turn") as caught:
        await items_of(llm_on(fake), ask())
    assert caught.value.retryable


async def test_a_content_filter_ends_the_turn_as_a_refusal(fake: FakeOpenAI) -> None:
    fake.plan(Reply(text="I can", finish_reason="content_filter"))
    turn = (await items_of(llm_on(fake), ask()))[-1]
    assert isinstance(turn, ModelTurn) and turn.stop_reason == "refusal"


async def test_the_responses_api_streams_text_and_tool_calls_with_usage(fake: FakeOpenAI) -> None:
    fake.plan(Reply(calls=(Call("search", {"query": "x"}, "call_x"),), output_tokens=9),
              Reply(text="Found it.", reasoning="Check first."))  # fmt: skip
    llm = llm_on(fake, api="responses")
    first = (await items_of(llm, ask()))[-1]
    assert isinstance(first, ModelTurn) and first.stop_reason == "tool_use"
    assert first.tool_uses == (ToolUseBlock("call_x", "search", {"query": "x"}),)
    assert first.usage.output_tokens == 9
    history = (Message("user", (TextBlock("Hi"),)), Message("assistant", first.content),
               Message("user", (ToolResultBlock("call_x", "X marks it"),)))  # fmt: skip
    items = await items_of(llm, ask(*history))
    second = items[-1]
    assert isinstance(second, ModelTurn) and second.text == "Found it."
    assert second.thinking == "Check first." and second.usage.cache_read_tokens > 0
    sent = fake.bodies[1]
    assert sent["instructions"] == SYSTEM and sent["store"] is False
    assert sent["input"][1:] == [
        {"type": "function_call", "call_id": "call_x", "name": "search",
         "arguments": '{"query":"x"}'},
        {"type": "function_call_output", "call_id": "call_x", "output": "X marks it"},
    ]  # fmt: skip


async def test_a_call_to_the_real_api_is_refused_while_requests_are_switched_off() -> None:
    client = openai.AsyncOpenAI(api_key="sk-not-real", base_url="https://api.openai.com/v1")
    with pytest.raises(ModelRequestsForbidden, match=r"api\.openai\.com"):
        await items_of(OpenAILLM(client, model="gpt-4.1", max_tokens=8), ask())


def test_without_a_key_the_adapter_says_which_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(LLMNotConfigured, match="OPENAI_API_KEY"):
        OpenAILLM.from_env(model="gpt-4.1", max_tokens=8)


def test_a_rate_limited_error_class_is_what_a_429_becomes() -> None:
    assert LLMRateLimited.code == "LLM_RATE_LIMITED"


async def test_a_wrong_key_is_not_configured_and_never_named(fake: FakeOpenAI) -> None:
    secret = "sk-proj-secretvalue-9876"
    client = openai.AsyncOpenAI(api_key=secret, base_url=fake.base_url)
    with pytest.raises(LLMNotConfigured, match="Incorrect API key") as caught:
        await items_of(OpenAILLM(client, model="gpt-4.1", max_tokens=8), ask())
    said = str(caught.value)
    assert "9876" not in said and "secretvalue" not in said and "sk-proj" not in said


async def test_search_results_reach_the_model_as_text_with_url_and_title(
    fake: FakeOpenAI,
) -> None:
    fake.plan(Reply(text="Cited."))
    pages = (
        SearchResultBlock("https://a.example/x", "Page A", "Alpha text"),
        SearchResultBlock("https://b.example/y", "Page B", ""),
    )
    history = (
        Message("user", (TextBlock("Find it"),)),
        Message("assistant", (ToolUseBlock("call_s", "search", {"query": "q"}),)),
        Message("user", (ToolResultBlock("call_s", "", results=pages), TextBlock("Go on"))),
    )
    await items_of(llm_on(fake), ask(*history))
    assert fake.bodies[0]["messages"][3:] == [
        {
            "role": "tool",
            "tool_call_id": "call_s",
            "content": "[source] Page A\nhttps://a.example/x\nAlpha text\n\n"
            "[source] Page B\nhttps://b.example/y\nhttps://b.example/y",
        },
        {"role": "user", "content": "Go on"},
    ]


async def test_arguments_that_are_not_json_are_kept_raw_for_the_engine_to_refuse(
    fake: FakeOpenAI,
) -> None:
    fake.plan(Reply(calls=(Call("search", '{"query": "unterminated', "call_r"),)))
    turn = (await items_of(llm_on(fake), ask()))[-1]
    assert isinstance(turn, ModelTurn) and turn.stop_reason == "tool_use"
    assert turn.tool_uses == (
        ToolUseBlock("call_r", "search", {"_raw": '{"query": "unterminated'}),
    )


async def test_calls_streamed_without_ids_get_ids_unique_in_the_session(fake: FakeOpenAI) -> None:
    calls = (Call("search", {"query": "a"}, None), Call("search", {"query": "b"}, None))
    fake.default = Reply(calls=calls)
    llm = llm_on(fake)
    first = (await items_of(llm, ask()))[-1]
    again = (await items_of(llm, ask()))[-1]  # the same context: the same ids
    assert isinstance(first, ModelTurn) and isinstance(again, ModelTurn)
    results = tuple(ToolResultBlock(u.id, "r") for u in first.tool_uses)
    history = (Message("user", (TextBlock("Hi"),)), Message("assistant", first.content),
               Message("user", results))  # fmt: skip
    later = (await items_of(llm, ask(*history)))[-1]
    assert isinstance(later, ModelTurn)
    ids = [u.id for u in first.tool_uses]
    assert ids == [u.id for u in again.tool_uses] and len(set(ids)) == 2
    assert not set(ids) & {u.id for u in later.tool_uses}
    assert all(i.replace("_", "").isalnum() for i in ids)


def test_tool_call_deltas_without_an_index_are_told_apart_by_their_ids() -> None:
    turn = TurnBuilder(model="llama3.1")
    for delta in (
        {"id": "c1", "function": {"name": "search", "arguments": '{"query":'}},
        {"function": {"arguments": '"a"}'}},
        {"id": "c2", "function": {"name": "search", "arguments": '{"query":"b"}'}},
    ):
        turn.add_call_delta(delta)
    turn.finish_reason = "stop"  # some servers say stop after tool calls
    built = turn.turn()
    assert built.stop_reason == "tool_use"
    assert built.tool_uses == (
        ToolUseBlock("c1", "search", {"query": "a"}),
        ToolUseBlock("c2", "search", {"query": "b"}),
    )


def test_an_assistant_turn_with_nothing_to_send_still_has_content() -> None:
    request = ModelRequest("", (), (Message("user", (TextBlock("Hi"),)),
                                    Message("assistant", (ThinkingBlock("hm", "sig"),)),
                                    Message("user", (TextBlock("And?"),))))  # fmt: skip
    assert to_chat(request, model="gpt-4.1", max_tokens=8)["messages"] == [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "And?"},
    ]


async def test_from_env_finds_the_key_base_url_and_api(
    fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", fake.api_key)
    monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
    fake.plan(Reply(text="From the environment."))
    llm = OpenAILLM.from_env(model="gpt-4.1", max_tokens=8, api="responses")
    try:
        turn = (await items_of(llm, ask()))[-1]
    finally:
        await llm.aclose()
    assert isinstance(turn, ModelTurn) and turn.text == "From the environment."
    assert [r.path for r in fake.requests] == ["/v1/responses"]
