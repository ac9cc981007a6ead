"""`AnthropicLLM` against a loopback server that speaks the Messages API wire format."""

from __future__ import annotations

import os
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anthropic
import pytest

from adapters.llm.anthropic import AnthropicLLM
from application.ports import (
    LLMBadRequest,
    LLMConnectionError,
    LLMError,
    LLMNotConfigured,
    LLMOverloaded,
    LLMRateLimited,
)
from domain.conversation import (
    Message,
    ModelCitation,
    ModelRequest,
    ModelTurn,
    SearchResultBlock,
    StreamItem,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
    Usage,
)
from tests.fakes.anthropic_server import (
    Cite,
    Cut,
    ErrorReply,
    FakeAnthropic,
    Text,
    Thinking,
    ToolUse,
    Turn,
    bad_request,
    overloaded,
    rate_limited,
    serve_fake_anthropic,
    server_error,
)

MODEL = "claude-test-1"
EPHEMERAL = {"type": "ephemeral"}


class RecordedSleeps:
    """Stands in for `asyncio.sleep`: remembers each delay and returns at once."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with serve_fake_anthropic() as server:
        yield server


@pytest.fixture
async def client(fake: FakeAnthropic) -> AsyncIterator[anthropic.AsyncAnthropic]:
    sdk = anthropic.AsyncAnthropic(api_key=fake.api_key, base_url=fake.base_url, max_retries=0)
    yield sdk
    await sdk.close()


@pytest.fixture
def sleeps() -> RecordedSleeps:
    return RecordedSleeps()


@pytest.fixture
def llm(client: anthropic.AsyncAnthropic, sleeps: RecordedSleeps) -> AnthropicLLM:
    return AnthropicLLM(client, model=MODEL, max_tokens=4096, max_retries=3, sleep=sleeps)


def ask(
    *messages: Message, thinking_budget: int = 0, tools: tuple[ToolSpec, ...] = ()
) -> ModelRequest:
    history = messages or (Message("user", (TextBlock("Hi"),)),)
    return ModelRequest(
        system="You are terse.", tools=tools, messages=history, thinking_budget=thinking_budget
    )


async def collect(llm: AnthropicLLM, request: ModelRequest) -> list[StreamItem]:
    return [item async for item in llm.stream(request)]


def finished(items: list[StreamItem]) -> ModelTurn:
    turn = items[-1]
    assert isinstance(turn, ModelTurn)
    assert not any(isinstance(i, ModelTurn) for i in items[:-1])
    return turn


async def test_text_turn_streams_deltas_then_the_finished_turn(
    llm: AnthropicLLM, fake: FakeAnthropic
) -> None:
    fake.plan(Turn((Text("Hello, event log", pieces=3),), stop_reason="end_turn"))

    items = await collect(llm, ask())

    assert items[:-1] == [TextDelta("Hello,"), TextDelta(" event"), TextDelta(" log")]
    turn = finished(items)
    assert turn.content == (TextBlock("Hello, event log"),)
    assert (turn.stop_reason, turn.model) == ("end_turn", MODEL)
    assert fake.bodies[0]["stream"] is True
    assert fake.bodies[0]["model"] == MODEL
    assert fake.bodies[0]["max_tokens"] == 4096


async def test_request_model_and_limit_override_the_configured_ones(
    llm: AnthropicLLM, fake: FakeAnthropic
) -> None:
    fake.plan(Turn((Text("ok"),), model="claude-other"))
    request = ModelRequest(
        system="",
        tools=(),
        messages=ask().messages,
        model="claude-other",
        max_tokens=100,
        metadata={"user_id": "u-1", "session_id": "s-1"},
    )

    turn = finished(await collect(llm, request))

    body = fake.bodies[0]
    assert (body["model"], body["max_tokens"], turn.model) == ("claude-other", 100, "claude-other")
    assert body["metadata"] == {"user_id": "u-1"}
    assert "system" not in body and "tools" not in body and "thinking" not in body


async def test_thinking_and_its_signature_round_trip(
    llm: AnthropicLLM, fake: FakeAnthropic
) -> None:
    fake.plan(
        Turn((Thinking("Six times seven", "sig-abc", pieces=2), Text("42"))),
        Turn((Text("Yes"),)),
    )
    question = Message("user", (TextBlock("6*7?"),))

    items = await collect(llm, ask(question, thinking_budget=1024))

    assert [i for i in items if isinstance(i, ThinkingDelta)] == [
        ThinkingDelta("Six time"),
        ThinkingDelta("s seven"),
    ]
    turn = finished(items)
    assert turn.content == (ThinkingBlock("Six times seven", "sig-abc"), TextBlock("42"))
    assert fake.bodies[0]["thinking"] == {"type": "enabled", "budget_tokens": 1024}

    follow_up = Message("user", (TextBlock("Sure?"),))
    await collect(
        llm, ask(question, Message("assistant", turn.content), follow_up, thinking_budget=1024)
    )

    sent_back = fake.bodies[1]["messages"][1]
    assert sent_back == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Six times seven", "signature": "sig-abc"},
            {"type": "text", "text": "42"},
        ],
    }


async def test_tool_input_is_assembled_from_several_json_chunks(
    llm: AnthropicLLM, fake: FakeAnthropic
) -> None:
    args: dict[str, object] = {
        "query": "event sourcing",
        "limit": 5,
        "filters": {"lang": ["en", "de"]},
    }
    fake.plan(
        Turn(
            (Text("Searching."), ToolUse("toolu_1", "search", args, pieces=5)),
            stop_reason="tool_use",
        ),
        Turn((Text("Nothing found."),)),
    )

    turn = finished(await collect(llm, ask()))

    assert turn.stop_reason == "tool_use"
    assert turn.tool_uses == (ToolUseBlock("toolu_1", "search", args),)

    result = Message("user", (ToolResultBlock("toolu_1", "search engine down", is_error=True),))
    await collect(llm, ask(ask().messages[0], Message("assistant", turn.content), result))

    assistant, user = fake.bodies[1]["messages"][1:]
    assert assistant["content"][1] == {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "search",
        "input": args,
    }
    assert user["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_1",
            "content": "search engine down",
            "is_error": True,
        }
    ]


async def test_pages_go_as_citable_search_results_and_citations_come_back_as_data(
    llm: AnthropicLLM, fake: FakeAnthropic
) -> None:
    pages = (
        SearchResultBlock("https://a.example/1", "[1] Heat pumps", "Heat pumps move heat."),
        SearchResultBlock("https://b.example/2", "[2] Cold", "They work at -20 C."),
    )
    use = ToolUseBlock("toolu_1", "web_search", {"query": "heat pumps"})
    history = (
        ask().messages[0],
        Message("assistant", (use,)),
        Message("user", (ToolResultBlock("toolu_1", "[1] ... [2] ...", results=pages),)),
    )
    fake.plan(
        Turn((Text("They work in the cold", cites=(Cite(1, "They work at -20 C."),)),)),
        Turn((Text("Fine."),)),
    )

    turn = finished(await collect(llm, ask(*history)))

    (result,) = fake.bodies[0]["messages"][2]["content"]
    assert result["tool_use_id"] == "toolu_1" and "is_error" not in result
    assert result["content"][1] == {
        "type": "search_result",
        "source": "https://b.example/2",
        "title": "[2] Cold",
        "content": [{"type": "text", "text": "They work at -20 C."}],
        "citations": {"enabled": True},
    }
    cited = ModelCitation("https://b.example/2", "[2] Cold", "They work at -20 C.")
    assert turn.content == (TextBlock("They work in the cold", (cited,)),)

    # Sent back on the next call, the turn is its text (citations are not input).
    await collect(llm, ask(*history, Message("assistant", turn.content)))
    assert fake.bodies[1]["messages"][3]["content"] == [
        {"type": "text", "text": "They work in the cold"}
    ]


async def test_usage_counts_cache_reads_and_writes(llm: AnthropicLLM, fake: FakeAnthropic) -> None:
    fake.plan(
        Turn(
            (Text("a"),),
            input_tokens=12,
            output_tokens=34,
            cache_read_input_tokens=1000,
            cache_creation_input_tokens=200,
        ),
        Turn(
            (Text("b"),),
            input_tokens=7,
            output_tokens=3,
            cache_read_input_tokens=None,
            cache_creation_input_tokens=None,
        ),
    )

    first = finished(await collect(llm, ask()))
    second = finished(await collect(llm, ask()))

    assert first.usage == Usage(
        input_tokens=12, output_tokens=34, cache_read_tokens=1000, cache_write_tokens=200
    )
    assert second.usage == Usage(input_tokens=7, output_tokens=3)


async def test_cache_breakpoints_sit_on_system_last_tool_and_marked_messages(
    llm: AnthropicLLM, fake: FakeAnthropic
) -> None:
    fake.plan(Turn((Text("ok"),)))
    schema: dict[str, object] = {"type": "object", "properties": {"q": {"type": "string"}}}
    tools = (ToolSpec("search", "Search the web", schema), ToolSpec("read", "Read a page", schema))
    history = (
        Message("user", (TextBlock("old question"),)),
        Message(
            "assistant",
            (ThinkingBlock("hm", "sig"), TextBlock("old answer")),
            cache_breakpoint=True,
        ),
        Message("user", (TextBlock("context"), TextBlock("new question")), cache_breakpoint=True),
        Message("assistant", (ThinkingBlock("only thinking", "sig2"),), cache_breakpoint=True),
        Message("user", (TextBlock("plan recitation"),)),
    )

    await collect(llm, ask(*history, tools=tools))

    body = fake.bodies[0]
    assert body["system"] == [
        {"type": "text", "text": "You are terse.", "cache_control": EPHEMERAL}
    ]
    assert "cache_control" not in body["tools"][0]
    assert body["tools"][1] == {
        "name": "read",
        "description": "Read a page",
        "input_schema": schema,
        "cache_control": EPHEMERAL,
    }
    marked = [
        [block.get("cache_control") for block in message["content"]] for message in body["messages"]
    ]
    # Thinking blocks cannot carry cache_control, so a breakpoint never lands on one.
    assert marked == [[None], [None, EPHEMERAL], [None, EPHEMERAL], [None], [None]]


async def test_overloaded_then_success_is_retried(
    llm: AnthropicLLM, fake: FakeAnthropic, sleeps: RecordedSleeps
) -> None:
    fake.plan(overloaded(), server_error(), Turn((Text("made it"),)))

    turn = finished(await collect(llm, ask()))

    assert turn.text == "made it"
    assert len(fake.bodies) == 3 and fake.bodies[0] == fake.bodies[2]
    # Exponential backoff from 0.5 s with jitter in [50%, 100%].
    assert len(sleeps.delays) == 2
    assert 0.25 <= sleeps.delays[0] <= 0.5 and 0.5 <= sleeps.delays[1] <= 1.0


@pytest.mark.parametrize(("retry_after", "expected_delay"), [(7, 7.0), (0.25, 0.25), (600, 20.0)])
async def test_rate_limit_waits_what_retry_after_asks_capped_at_max_backoff(
    llm: AnthropicLLM,
    fake: FakeAnthropic,
    sleeps: RecordedSleeps,
    retry_after: float,
    expected_delay: float,
) -> None:
    fake.plan(rate_limited(retry_after=retry_after), Turn((Text("ok"),)))

    turn = finished(await collect(llm, ask()))

    assert turn.text == "ok"
    assert sleeps.delays == [expected_delay]


@pytest.mark.parametrize("cut", ["reset", "eof", "overloaded_event"])
async def test_stream_cut_before_any_delta_is_retried_without_duplicates(
    llm: AnthropicLLM, fake: FakeAnthropic, sleeps: RecordedSleeps, cut: Cut
) -> None:
    # Three events: message_start, ping and the first content_block_start.
    fake.plan(
        Turn((Text("first try"),), cut_after=3, cut=cut), Turn((Text("second try", pieces=2),))
    )

    items = await collect(llm, ask())

    assert items[:-1] == [TextDelta("secon"), TextDelta("d try")]
    assert finished(items).text == "second try"
    assert len(fake.bodies) == 2 and len(sleeps.delays) == 1


@pytest.mark.parametrize(
    ("cut", "error"), [("reset", LLMConnectionError), ("overloaded_event", LLMOverloaded)]
)
async def test_stream_cut_after_deltas_raises_instead_of_repeating_them(
    llm: AnthropicLLM, fake: FakeAnthropic, cut: Cut, error: type[LLMError]
) -> None:
    # message_start, ping, content_block_start, then one of two text deltas.
    fake.plan(Turn((Text("Hello world", pieces=2),), cut_after=4, cut=cut), Turn((Text("unused"),)))
    seen: list[StreamItem] = []

    with pytest.raises(error) as raised:
        async for item in llm.stream(ask()):
            seen.append(item)

    assert seen == [TextDelta("Hello ")]
    assert raised.value.retryable is True
    assert "after part of the turn was streamed" in str(raised.value)
    assert len(fake.bodies) == 1 and fake.unused_replies == 1


async def test_a_caller_that_stops_early_can_stream_again(
    llm: AnthropicLLM, fake: FakeAnthropic
) -> None:
    fake.plan(Turn((Text("a long answer", pieces=3),)), Turn((Text("next"),)))

    stream = llm.stream(ask())
    first = await anext(stream)
    await stream.aclose()

    assert first == TextDelta("a lon")
    assert finished(await collect(llm, ask())).text == "next"


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (overloaded(), LLMOverloaded),
        (server_error(), LLMOverloaded),
        (rate_limited(), LLMRateLimited),
    ],
)
async def test_persistent_failure_becomes_a_retryable_port_error(
    llm: AnthropicLLM,
    fake: FakeAnthropic,
    sleeps: RecordedSleeps,
    reply: ErrorReply,
    error: type[LLMError],
) -> None:
    fake.plan(*[reply] * 4, Turn((Text("too late"),)))

    with pytest.raises(error) as raised:
        await collect(llm, ask())

    assert raised.value.retryable is True
    assert reply.error_type in str(raised.value)
    assert len(fake.bodies) == 4 and fake.unused_replies == 1
    assert len(sleeps.delays) == 3
    assert all(0.5 * cap <= d <= cap for d, cap in zip(sleeps.delays, [0.5, 1.0, 2.0], strict=True))


async def test_bad_request_is_not_retried(
    llm: AnthropicLLM, fake: FakeAnthropic, sleeps: RecordedSleeps
) -> None:
    fake.plan(bad_request("messages: roles must alternate"), Turn((Text("unused"),)))

    with pytest.raises(LLMBadRequest) as raised:
        await collect(llm, ask())

    assert raised.value.retryable is False
    assert "roles must alternate" in str(raised.value)
    assert len(fake.bodies) == 1 and sleeps.delays == []


async def test_request_the_api_refuses_is_a_bad_request(
    llm: AnthropicLLM, fake: FakeAnthropic
) -> None:
    with pytest.raises(LLMBadRequest, match="budget_tokens"):
        await collect(llm, ask(thinking_budget=100))


async def test_refused_api_key_is_not_configured_and_not_retried(
    fake: FakeAnthropic, sleeps: RecordedSleeps
) -> None:
    sdk = anthropic.AsyncAnthropic(api_key="sk-ant-wrong", base_url=fake.base_url, max_retries=0)
    llm = AnthropicLLM(sdk, model=MODEL, max_tokens=1024, sleep=sleeps)
    fake.plan(Turn((Text("unused"),)))

    with pytest.raises(LLMNotConfigured, match="authentication_error"):
        await collect(llm, ask())

    await llm.aclose()
    assert len(fake.requests) == 1 and sleeps.delays == []


async def test_unreachable_server_is_a_connection_error_after_retries(
    sleeps: RecordedSleeps,
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    sdk = anthropic.AsyncAnthropic(
        api_key="k", base_url=f"http://127.0.0.1:{closed_port}", max_retries=0
    )
    llm = AnthropicLLM(sdk, model=MODEL, max_tokens=1024, max_retries=2, sleep=sleeps)

    with pytest.raises(LLMConnectionError) as raised:
        await collect(llm, ask())

    await llm.aclose()
    assert raised.value.retryable is True
    assert len(sleeps.delays) == 2


async def test_sdk_retries_of_a_given_client_are_turned_off(
    fake: FakeAnthropic, sleeps: RecordedSleeps
) -> None:
    sdk = anthropic.AsyncAnthropic(api_key=fake.api_key, base_url=fake.base_url, max_retries=5)
    llm = AnthropicLLM(sdk, model=MODEL, max_tokens=1024, max_retries=1, sleep=sleeps)
    fake.plan(*[overloaded()] * 3)

    with pytest.raises(LLMOverloaded):
        await collect(llm, ask())

    await sdk.close()
    assert len(fake.bodies) == 2 and fake.unused_replies == 1


def _clear_anthropic_env(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    for name in os.environ:
        if name.startswith("ANTHROPIC_"):
            monkeypatch.delenv(name)
    # No profile on disk either: the SDK also looks for credentials there.
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))


async def test_from_env_uses_the_sdk_environment_variables(
    fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _clear_anthropic_env(monkeypatch, tmp_path)
    monkeypatch.setenv("ANTHROPIC_API_KEY", fake.api_key)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
    fake.plan(Turn((Text("from env"),)))

    llm = AnthropicLLM.from_env(model=MODEL, max_tokens=1024)
    turn = finished(await collect(llm, ask()))
    await llm.aclose()

    assert turn.text == "from env"
    headers = fake.requests[0].headers
    assert fake.api_key in (
        headers.get("x-api-key"),
        headers.get("authorization", "").removeprefix("Bearer "),
    )
    assert "anthropic-version" in headers


def test_from_env_without_a_key_is_not_configured(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _clear_anthropic_env(monkeypatch, tmp_path)

    with pytest.raises(LLMNotConfigured, match="ANTHROPIC_API_KEY"):
        AnthropicLLM.from_env(model=MODEL, max_tokens=1024)
