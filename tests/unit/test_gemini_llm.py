"""The Gemini adapter with the real `google-genai` SDK against the local fake Gemini API."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator

import pytest

from adapters.llm.gemini import GeminiLLM
from adapters.llm.retries import ModelRequestsForbidden
from application.ports import (
    LLMBadRequest,
    LLMConnectionError,
    LLMContextTooLong,
    LLMNotConfigured,
    LLMOverloaded,
    LLMRefused,
)
from domain.conversation import (
    Message,
    ModelRequest,
    ModelTurn,
    StreamItem,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ToolResultBlock,
    ToolSpec,
    Usage,
)
from tests.fakes.gemini_server import (
    Call,
    Failure,
    FakeGemini,
    Reply,
    retry_info,
    serve_fake_gemini,
)

SEARCH = ToolSpec(
    "search", "Search the web.", {"type": "object", "properties": {"query": {"type": "string"}}}
)
SYSTEM = "You are a careful agent. " * 20


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


@pytest.fixture
def fake() -> Iterator[FakeGemini]:
    with serve_fake_gemini() as running:
        yield running


def llm_on(fake: FakeGemini) -> GeminiLLM:
    return GeminiLLM.connect(api_key=fake.api_key, base_url=fake.base_url,
                             model="gemini-2.5-pro", max_tokens=256, sleep=Sleeps())  # fmt: skip


def ask(*messages: Message, budget: int = 0) -> ModelRequest:
    history = messages or (Message("user", (TextBlock("Hi"),)),)
    return ModelRequest(SYSTEM, (SEARCH,), history, thinking_budget=budget)


async def items_of(llm: GeminiLLM, request: ModelRequest) -> list[StreamItem]:
    return [item async for item in llm.stream(request)]


async def turn_of(llm: GeminiLLM, request: ModelRequest) -> ModelTurn:
    turn = (await items_of(llm, request))[-1]
    assert isinstance(turn, ModelTurn)
    return turn


async def test_a_text_turn_streams_with_its_model_version_and_exact_usage(
    fake: FakeGemini,
) -> None:
    fake.plan(Reply(text="Hello there, friend", pieces=3, output_tokens=7))
    items = await items_of(llm_on(fake), ask())
    turn = items[-1]
    assert isinstance(turn, ModelTurn)
    deltas = [i.text for i in items if isinstance(i, TextDelta)]
    assert len(deltas) == 3 and "".join(deltas) == turn.text == "Hello there, friend"
    assert turn.model == "gemini-2.5-pro-001" and turn.stop_reason == "end_turn"
    request = fake.requests[0]
    assert request.path.endswith("/models/gemini-2.5-pro:streamGenerateContent")
    assert "alt=sse" in request.query
    prompt = len(json.dumps(request.body, ensure_ascii=False)) // 4
    assert turn.usage == Usage(input_tokens=prompt, output_tokens=7)
    assert request.body["systemInstruction"]["parts"] == [{"text": SYSTEM}]
    declared = request.body["tools"][0]["functionDeclarations"][0]
    # Sent as the SDK spells it; Google's JSON parser takes either spelling of a field.
    schema = declared.get("parametersJsonSchema", declared.get("parameters_json_schema"))
    assert schema == SEARCH.input_schema


async def test_two_function_calls_their_results_and_the_signature_go_back(
    fake: FakeGemini,
) -> None:
    fake.plan(
        Reply(calls=(Call("search", {"query": "a"}), Call("search", {"query": "b"}))),
        Reply(text="Both found."),
    )
    llm = llm_on(fake)
    first = await turn_of(llm, ask())
    assert first.stop_reason == "tool_use"
    a, b = first.tool_uses
    assert (a.name, a.input, b.name, b.input) == (
        "search",
        {"query": "a"},
        "search",
        {"query": "b"},
    )
    results = (ToolResultBlock(a.id, "A!"), ToolResultBlock(b.id, "B?", True))
    history = (Message("user", (TextBlock("Hi"),)), Message("assistant", first.content),
               Message("user", results))  # fmt: skip
    second = await turn_of(llm, ask(*history))  # the fake refuses a call without its signature
    assert second.text == "Both found."
    model_turn, answers = fake.bodies[1]["contents"][1:]
    assert model_turn["role"] == "model" and "thoughtSignature" in model_turn["parts"][0]
    assert [p["functionResponse"] for p in answers["parts"]] == [
        {"id": a.id, "name": "search", "response": {"result": "A!"}},
        {"id": b.id, "name": "search", "response": {"error": "B?"}},
    ]
    assert [p["functionCall"]["id"] for p in model_turn["parts"]] == [a.id, b.id]


async def test_calls_gemini_gave_no_id_get_ids_the_same_in_a_replay_and_new_each_turn(
    fake: FakeGemini,
) -> None:
    fake.default = Reply(calls=(Call("search", {"query": "a"}), Call("search", {"query": "b"})))
    llm = llm_on(fake)
    first = await turn_of(llm, ask())
    again = await turn_of(llm, ask())
    results = tuple(ToolResultBlock(u.id, "A") for u in first.tool_uses)
    history = (Message("user", (TextBlock("Hi"),)), Message("assistant", first.content),
               Message("user", results))  # fmt: skip
    later = await turn_of(llm, ask(*history))
    ids = [u.id for u in first.tool_uses]
    assert [u.id for u in again.tool_uses] == ids  # the same request: the same ids
    assert len({*ids, *(u.id for u in later.tool_uses)}) == 4  # unique in the session
    assert all(i.replace("_", "").isalnum() for i in ids)  # any vendor takes them


async def test_given_call_ids_are_kept(fake: FakeGemini) -> None:
    fake.plan(Reply(calls=(Call("search", {"query": "a"}, id="fc-7"),)))
    assert [u.id for u in (await turn_of(llm_on(fake), ask())).tool_uses] == ["fc-7"]


async def test_each_request_begins_with_the_previous_one_byte_for_byte(fake: FakeGemini) -> None:
    fake.default = Reply(calls=(Call("search", {"query": "more"}),))
    llm = llm_on(fake)
    history: tuple[Message, ...] = (Message("user", (TextBlock("Research this"),)),)
    turns = []
    for step in range(3):
        turn = await turn_of(llm, ask(*history))
        turns.append(turn)
        use = turn.tool_uses[0]
        # Another vendor's thinking in the log is never sent.
        content = (ThinkingBlock("hmm", "sig-anthropic"), *turn.content)
        history = (*history, Message("assistant", content),
                   Message("user", (ToolResultBlock(use.id, f"result {step}"),)))  # fmt: skip
    raws = [json.loads(r.raw) for r in fake.requests]
    for before, after in itertools.pairwise(raws):
        n = len(before["contents"])
        assert json.dumps(after["contents"][:n]) == json.dumps(before["contents"])
        assert json.dumps(after["tools"]) == json.dumps(before["tools"])
    assert turns[0].usage.cache_read_tokens == 0
    assert all(t.usage.cache_read_tokens > 0 for t in turns[1:])
    assert all("hmm" not in r.raw.decode() for r in fake.requests)


async def test_thoughts_stream_as_thinking_when_a_budget_is_set(fake: FakeGemini) -> None:
    fake.plan(Reply(text="42", thought="Work it out first.", output_tokens=5))
    items = await items_of(llm_on(fake), ask(budget=1024))
    kinds = [type(i).__name__ for i in items]
    assert kinds[0] == "ThinkingStarted" and "ThinkingDelta" in kinds
    turn = items[-1]
    assert (
        isinstance(turn, ModelTurn) and turn.thinking == "Work it out first." and turn.text == "42"
    )
    assert turn.usage.output_tokens == 5 + len("Work it out first.") // 4  # thoughts count
    config = fake.bodies[0]["generationConfig"]
    thinking = config.get("thinkingConfig", config.get("thinking_config"))
    assert thinking in (
        {"includeThoughts": True, "thinkingBudget": 1024},
        {"include_thoughts": True, "thinking_budget": 1024},
    )


async def test_rate_limits_are_retried_after_the_delay_gemini_asks_for(fake: FakeGemini) -> None:
    quota = Failure(429, "RESOURCE_EXHAUSTED", "Quota exceeded", (retry_info("7s"),))
    fake.plan(quota, Reply(text="ok"))
    sleeps = Sleeps()
    llm = GeminiLLM.connect(api_key=fake.api_key, base_url=fake.base_url,
                            model="gemini-2.5-pro", max_tokens=256, sleep=sleeps)  # fmt: skip
    assert (await turn_of(llm, ask())).text == "ok"
    assert sleeps.delays == [7.0]


async def test_a_wrong_key_is_not_configured_and_the_key_is_not_repeated(
    fake: FakeGemini,
) -> None:
    llm = GeminiLLM.connect(api_key="AIza-wrong-key", base_url=fake.base_url,
                            model="gemini-2.5-pro", max_tokens=8)  # fmt: skip
    with pytest.raises(LLMNotConfigured, match="API key not valid") as caught:
        await items_of(llm, ask())
    assert "AIza-wrong-key" not in str(caught.value) and len(fake.requests) == 1


async def test_an_unavailable_model_fails_as_overloaded_after_the_retries(
    fake: FakeGemini,
) -> None:
    fake.default = Failure(503, "UNAVAILABLE", "The model is overloaded.")
    with pytest.raises(LLMOverloaded, match="503") as caught:
        await items_of(llm_on(fake), ask())
    assert caught.value.retryable and len(fake.requests) == 5


@pytest.mark.parametrize(
    ("failure", "error", "said"),
    [
        (Failure(403, "PERMISSION_DENIED", "API key lacks access"), LLMNotConfigured, "access"),
        (
            Failure(
                400,
                "INVALID_ARGUMENT",
                "The input token count (2000000) exceeds the maximum "
                "number of tokens allowed (1048576).",
            ),
            LLMContextTooLong,
            "exceeds",
        ),
        (Failure(400, "INVALID_ARGUMENT", "bad value"), LLMBadRequest, "bad value"),
    ],
)
async def test_refusals_are_not_retried_and_say_why(
    fake: FakeGemini, failure: Failure, error: type[Exception], said: str
) -> None:
    fake.plan(failure)
    with pytest.raises(error, match=said):
        await items_of(llm_on(fake), ask())
    assert len(fake.requests) == 1


async def test_a_model_gemini_does_not_have_is_a_bad_request_naming_it(fake: FakeGemini) -> None:
    request = ModelRequest("", (), (Message("user", (TextBlock("Hi"),)),), model="gemini-9")
    with pytest.raises(LLMBadRequest, match="gemini-9"):
        await items_of(llm_on(fake), request)


async def test_a_blocked_prompt_is_refused_and_a_safety_stop_is_a_refusal(
    fake: FakeGemini,
) -> None:
    fake.plan(Reply(block_reason="PROHIBITED_CONTENT"), Reply(text="I", finish_reason="SAFETY"))
    with pytest.raises(LLMRefused, match="PROHIBITED_CONTENT"):
        await items_of(llm_on(fake), ask())
    assert (await turn_of(llm_on(fake), ask())).stop_reason == "refusal"


async def test_a_stream_cut_off_is_retried_before_a_delta_and_raised_after(
    fake: FakeGemini,
) -> None:
    fake.plan(Reply(text="never", pieces=1, cut_after=0), Reply(text="whole"))
    assert (await turn_of(llm_on(fake), ask())).text == "whole"

    fake.plan(Reply(text="half an answer", pieces=2, cut_after=1))
    with pytest.raises(LLMConnectionError, match="part of the turn") as caught:
        await items_of(llm_on(fake), ask())
    assert caught.value.retryable


async def test_a_call_to_the_real_api_is_refused_while_requests_are_switched_off() -> None:
    llm = GeminiLLM.connect(api_key="not-real", base_url=None, model="gemini-2.5-pro",
                            max_tokens=8)  # fmt: skip
    with pytest.raises(ModelRequestsForbidden, match=r"generativelanguage\.googleapis\.com"):
        await items_of(llm, ask())


def test_without_a_key_the_adapter_says_which_to_set(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(LLMNotConfigured, match="GEMINI_API_KEY"):
        GeminiLLM.from_env(model="gemini-2.5-pro", max_tokens=8)
