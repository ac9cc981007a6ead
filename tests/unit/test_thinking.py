"""Extended thinking: its settings, what the Anthropic adapter asks and streams, what the
fake API refuses as the real one does, and how a turn's thinking is kept and shown."""

from __future__ import annotations

from collections.abc import AsyncIterator
from uuid import uuid4

import anthropic
import pytest

from adapters.bootstrap.in_memory import in_memory_sessions
from adapters.config.settings import Settings
from adapters.http.streams.sse import live_payload, payloads
from adapters.llm.anthropic import AnthropicLLM
from adapters.llm.anthropic_wire import to_wire
from application.engine_settings import EngineSettings, frame_of
from application.ports import LLMBadRequest
from domain.context_turns import content_block
from domain.conversation import (
    Message,
    ModelRequest,
    ModelTurn,
    RedactedThinkingBlock,
    StreamItem,
    TextBlock,
    ThinkingBlock,
    ThinkingDelta,
    ThinkingStarted,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from domain.errors import InvalidValue
from domain.stored_blocks import turn_blocks
from domain.values import SessionSettings
from schemas import sse
from tests.fakes.anthropic_server import (
    FakeAnthropic,
    RedactedThinking,
    Text,
    Thinking,
    ToolUse,
    Turn,
    serve_fake_anthropic,
)

MODEL = "claude-sonnet-5-5"
QUESTION = Message("user", (TextBlock("What is 6*7?"),))


Api = tuple[AnthropicLLM, FakeAnthropic]


@pytest.fixture
async def api() -> AsyncIterator[Api]:
    """The adapter on the real SDK, and the fake Messages API it talks to."""
    with serve_fake_anthropic() as fake:
        sdk = anthropic.AsyncAnthropic(api_key=fake.api_key, base_url=fake.base_url)
        yield AnthropicLLM(sdk, model=MODEL, max_tokens=4096, max_retries=0), fake
        await sdk.close()


def ask(*messages: Message, budget: int = 2048, model: str | None = None) -> ModelRequest:
    return ModelRequest("Be brief.", (), messages or (QUESTION,), model, thinking_budget=budget)


async def collect(llm: AnthropicLLM, request: ModelRequest) -> list[StreamItem]:
    return [item async for item in llm.stream(request)]


def turn_of(items: list[StreamItem]) -> ModelTurn:
    assert isinstance(items[-1], ModelTurn)
    return items[-1]


# -- the settings -----------------------------------------------------------------------


def test_the_process_budget_is_read_from_the_environment_and_checked() -> None:
    assert Settings.from_env({}).thinking_budget == 0
    assert Settings.from_env({"TOKENDANCE_THINKING_BUDGET": "2048"}).thinking_budget == 2048
    for bad in ("500", "8192", "lots"):
        with pytest.raises(SystemExit, match="TOKENDANCE_THINKING_BUDGET"):
            Settings.from_env({"TOKENDANCE_THINKING_BUDGET": bad})
    raised = {"TOKENDANCE_THINKING_BUDGET": "9000", "TOKENDANCE_MAX_TOKENS": "16000"}
    assert Settings.from_env(raised).thinking_budget == 9000


def test_a_sessions_budget_wins_over_the_process_default() -> None:
    engine = EngineSettings(thinking_budget=2048)
    assert frame_of(engine, SessionSettings(), (), "").thinking_budget == 2048
    assert frame_of(engine, SessionSettings(thinking_budget=0), (), "").thinking_budget == 0
    mine = SessionSettings(thinking_budget=5000)
    assert frame_of(engine, mine, (), "").thinking_budget == 5000


def test_a_stored_budget_is_checked_and_kept() -> None:
    kept = SessionSettings.of({"thinking_budget": 1024})
    assert kept.thinking_budget == 1024 and kept.to_json()["thinking_budget"] == 1024
    assert "thinking_budget" not in SessionSettings().to_json()  # as older events stored it
    for bad in (5, 1023, True, "1024"):
        with pytest.raises(InvalidValue, match="thinking_budget"):
            SessionSettings.of({"thinking_budget": bad})


# -- what is asked of the model -----------------------------------------------------------


def test_thinking_is_asked_only_of_models_that_think_and_within_the_output_limit() -> None:
    def asked(request: ModelRequest, max_tokens: int = 4096) -> object:
        return to_wire(request, model=MODEL, max_tokens=max_tokens).thinking

    assert asked(ask()) == {"type": "enabled", "budget_tokens": 2048}
    assert asked(ask(budget=0)) is None
    assert asked(ask(model="claude-3-5-sonnet-20241022")) is None
    assert asked(ask(model="claude-3-haiku-20240307")) is None
    assert asked(ask(model="claude-3-7-sonnet-latest")) is not None
    # A limit lowered under the budget: what fits, or none below the API's minimum.
    assert asked(ask(budget=8000), max_tokens=4096) == {"type": "enabled", "budget_tokens": 4095}
    assert asked(ask(budget=2048), max_tokens=1024) is None


def test_a_tool_loop_begun_without_thinking_is_finished_without_it() -> None:
    unthought = Message("assistant", (ToolUseBlock("t1", "search", {"q": "x"}),))
    result = Message("user", (ToolResultBlock("t1", "found"),))
    request = ask(QUESTION, unthought, result)
    assert to_wire(request, model=MODEL, max_tokens=4096).thinking is None
    thought = Message("assistant", (ThinkingBlock("hm", "sig"), *unthought.content))
    again = ask(QUESTION, thought, result)
    assert to_wire(again, model=MODEL, max_tokens=4096).thinking is not None


# -- the adapter against the fake API -------------------------------------------------------


async def test_thinking_is_announced_streamed_and_kept_with_its_signature(api: Api) -> None:
    llm, fake = api
    fake.plan(
        Turn((RedactedThinking("opaque=="), Thinking("Six sevens", pieces=2), Text("42")),
             output_tokens=900),
        Turn((Text("Yes."),)),
    )  # fmt: skip
    items = await collect(llm, ask())

    assert items[:3] == [ThinkingStarted(), ThinkingDelta("Six s"), ThinkingDelta("evens")]
    assert items.count(ThinkingStarted()) == 1, "once a turn"
    turn = turn_of(items)
    redacted, thinking, text = turn.content
    assert redacted == RedactedThinkingBlock("opaque==")
    assert isinstance(thinking, ThinkingBlock) and thinking.thinking == "Six sevens"
    assert thinking.signature and text == TextBlock("42")
    assert turn.usage.output_tokens == 900  # thinking is output

    follow = Message("user", (TextBlock("Sure?"),))
    turn_of(await collect(llm, ask(QUESTION, Message("assistant", turn.content), follow)))
    assert fake.bodies[1]["messages"][1]["content"] == [
        {"type": "redacted_thinking", "data": "opaque=="},
        {"type": "thinking", "thinking": "Six sevens", "signature": thinking.signature},
        {"type": "text", "text": "42"},
    ]


async def test_the_fake_thinks_whenever_asked_to(api: Api) -> None:
    llm, fake = api
    fake.plan(Turn((Text("42"),)), Turn((Text("42"),)))
    thought = turn_of(await collect(llm, ask()))
    assert isinstance(thought.content[0], ThinkingBlock) and thought.content[0].signature
    plain = await collect(llm, ask(budget=0))
    assert turn_of(plain).content == (TextBlock("42"),) and ThinkingStarted() not in plain


async def test_a_changed_signature_is_refused_as_the_api_refuses_it(api: Api) -> None:
    llm, fake = api
    fake.plan(Turn((Thinking("Six sevens"), ToolUse("t1", "calc", {"x": 6}))), Turn((Text("."),)))
    turn = turn_of(await collect(llm, ask()))
    signed = turn.content[0]
    assert isinstance(signed, ThinkingBlock)
    result = Message("user", (ToolResultBlock("t1", "42"),))
    for changed in (
        ThinkingBlock(signed.thinking, signed.signature[:-2] + "AA"),
        ThinkingBlock(signed.thinking + " (edited)", signed.signature),
    ):
        forged = Message("assistant", (changed, *turn.content[1:]))
        with pytest.raises(LLMBadRequest, match="Invalid `signature`"):
            await collect(llm, ask(QUESTION, forged, result))
    assert fake.unused_replies == 1, "no reply was given to a refused request"


async def test_a_tool_turn_without_its_thinking_is_refused_as_the_api_refuses_it(
    api: Api,
) -> None:
    fake = api[1]
    fake.plan(Turn((Text("unused"),)))
    client = anthropic.AsyncAnthropic(api_key=fake.api_key, base_url=fake.base_url)
    with pytest.raises(anthropic.BadRequestError, match="must start with a thinking block"):
        async with client.messages.stream(
            model=MODEL, max_tokens=4096, thinking={"type": "enabled", "budget_tokens": 1024},
            messages=[
                {"role": "user", "content": "6*7?"},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "t1", "name": "calc", "input": {}}]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "42"}]},
            ],
        ) as stream:  # fmt: skip
            await stream.get_final_message()
    await client.close()
    assert fake.unused_replies == 1


# -- kept in the log, shown to the user -------------------------------------------------------


def test_a_turns_thinking_is_stored_whole_and_read_back_unchanged() -> None:
    content = (RedactedThinkingBlock("opaque=="), ThinkingBlock("hm", "sig=="), TextBlock("42"))
    stored = turn_blocks(ModelTurn(content, "end_turn", Usage(), MODEL))
    assert stored[0] == {"type": "redacted_thinking", "data": "opaque=="}
    assert tuple(content_block(b) for b in stored) == content


def test_the_stream_shows_thinking_start_chunks_and_end_never_redacted_data() -> None:
    assert live_payload(ThinkingStarted()) == sse.Thinking(content="", status="start")
    assert live_payload(ThinkingDelta("hm")) == sse.Thinking(content="hm")
    app = in_memory_sessions()
    sid = app.start_session(workspace_id=uuid4(), owner_id=uuid4(), title="t").session_id
    run = uuid4()
    app.request_run(sid, run)
    app.start_run(sid, run, "worker-1")
    only_redacted = (RedactedThinkingBlock("opaque=="), TextBlock("42"))
    app.record_assistant_turn(sid, run, ModelTurn(only_redacted, "end_turn", Usage(), MODEL), 1)
    turn = list(app.session_events(sid))[-1]
    shown = payloads(turn)
    assert [(type(p), getattr(p, "status", None)) for p in shown] == [
        (sse.Thinking, "end"),  # its start was sent live, so its end is too
        (sse.Message, None),
    ]
    assert "opaque" not in str(shown)
