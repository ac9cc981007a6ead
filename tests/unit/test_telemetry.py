"""Spans of model calls and tool runs (GenAI semantic conventions), in an in-memory exporter."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from uuid import uuid4

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from adapters.bootstrap import bootstrap_engine
from adapters.bootstrap.parts import build_tools
from adapters.config.settings import Settings
from adapters.llm.scripted import ScriptedLLM
from adapters.llm.tokens import CharRatioTokenCounter
from adapters.observability.telemetry import (
    TracedLLM,
    shutdown,
    traced_llm,
    traced_tools,
    tracer_provider_from_env,
)
from application.engine_settings import EngineSettings
from application.ports import LLMRateLimited
from application.tools.registry import ToolRegistry
from domain.conversation import (
    SESSION_KEY,
    Message,
    ModelRequest,
    ModelTurn,
    StreamItem,
    TextBlock,
    TextDelta,
)
from domain.values import SessionSettings
from tests.fakes.engine import FlakySearch

TURNS: list[dict[str, object]] = [
    {
        "text": "Let me look that up.",
        "tool_calls": [{"name": "note_progress", "input": {"text": "started"}, "id": "t1"}],
        "usage": {"input": 120, "output": 17, "cache_read": 900, "cache_write": 64},
    },
    {
        "text": "Done.",
        "stop_reason": "end_turn",
        "usage": {"input": 30, "output": 5, "cache_read": 1000, "cache_write": 0},
    },
]


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    yield exporter
    exporter.clear()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider
    provider.shutdown()


def request(*, model: str | None = "claude-test-1", session: str = "s-1") -> ModelRequest:
    return ModelRequest(
        system="You are a test.",
        tools=(),
        messages=(Message("user", (TextBlock("hi"),)),),
        model=model,
        max_tokens=2048,
        metadata={SESSION_KEY: session},
    )


async def collect(llm: object, req: ModelRequest) -> list[StreamItem]:
    assert isinstance(llm, ScriptedLLM | TracedLLM)
    return [item async for item in llm.stream(req)]


def finished(exporter: InMemorySpanExporter, prefix: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name.startswith(prefix)]


async def test_each_model_call_is_one_chat_span_with_the_turns_usage(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    traced = traced_llm(ScriptedLLM.from_turns(TURNS, model="claude-test-1-20250101"), provider)
    # One session: the script plays its turns in order for it.
    first = await collect(traced, request(session="s-1"))
    second = await collect(traced, request(session="s-1"))

    spans = finished(exporter, "chat ")
    assert len(spans) == 2
    assert [s.name for s in spans] == ["chat claude-test-1", "chat claude-test-1"]
    for span, items in ((spans[0], first), (spans[1], second)):
        turn = items[-1]
        assert isinstance(turn, ModelTurn)
        usage = turn.usage
        assert span.kind is SpanKind.CLIENT
        assert span.status.status_code is StatusCode.UNSET
        assert dict(span.attributes or {}) == {
            "gen_ai.operation.name": "chat",
            "gen_ai.system": "anthropic",
            "gen_ai.provider.name": "anthropic",
            "gen_ai.request.model": "claude-test-1",
            "gen_ai.request.max_tokens": 2048,
            "gen_ai.conversation.id": "s-1",
            "tokendance.session_id": "s-1",
            "gen_ai.response.model": "claude-test-1-20250101",
            "gen_ai.response.finish_reasons": (turn.stop_reason,),
            # Input counts every input token, cached or not (the conventions' definition).
            "gen_ai.usage.input_tokens": (
                usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
            ),
            "gen_ai.usage.output_tokens": usage.output_tokens,
            "gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens,
            "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_tokens,
        }
    first_attrs, second_attrs = (dict(s.attributes or {}) for s in spans)
    assert first_attrs["gen_ai.usage.input_tokens"] == 120 + 900 + 64
    assert first_attrs["gen_ai.usage.cache_read.input_tokens"] == 900
    assert first_attrs["gen_ai.usage.cache_creation.input_tokens"] == 64
    assert first_attrs["gen_ai.response.finish_reasons"] == ("tool_use",)
    assert second_attrs["gen_ai.usage.output_tokens"] == 5
    assert second_attrs["gen_ai.response.finish_reasons"] == ("end_turn",)


async def test_the_stream_passes_through_unchanged(provider: TracerProvider) -> None:
    plain = await collect(ScriptedLLM.from_turns(TURNS), request())
    traced = await collect(traced_llm(ScriptedLLM.from_turns(TURNS), provider), request())
    assert traced == plain
    assert isinstance(traced[0], TextDelta) and isinstance(traced[-1], ModelTurn)


async def test_a_request_without_a_model_is_named_unknown(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    await collect(traced_llm(ScriptedLLM.from_turns(TURNS), provider), request(model=None))
    (span,) = finished(exporter, "chat ")
    assert span.name == "chat unknown"
    assert (span.attributes or {})["gen_ai.request.model"] == "unknown"


async def test_a_failed_model_call_is_an_error_span_with_the_error_code(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    def refuse(_: ModelRequest) -> ModelTurn:
        raise LLMRateLimited("429 after 3 retries", retryable=True)

    with pytest.raises(LLMRateLimited):
        await collect(traced_llm(ScriptedLLM(refuse), provider), request())

    (span,) = finished(exporter, "chat ")
    assert span.status.status_code is StatusCode.ERROR
    assert span.status.description == "429 after 3 retries"
    attributes = span.attributes or {}
    assert attributes["error.type"] == "LLM_RATE_LIMITED"
    assert "gen_ai.usage.input_tokens" not in attributes
    assert [e.name for e in span.events] == ["exception"]


async def test_a_consumer_that_stops_early_still_ends_the_span(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    traced = traced_llm(ScriptedLLM.from_turns(TURNS), provider)
    assert isinstance(traced, TracedLLM)
    stream = traced.stream(request())
    async with contextlib.aclosing(stream):  # type: ignore[type-var]
        first = await anext(stream)
    assert isinstance(first, TextDelta)

    (span,) = finished(exporter, "chat ")
    assert span.end_time is not None
    assert span.status.status_code is StatusCode.UNSET
    assert "gen_ai.usage.output_tokens" not in (span.attributes or {})


async def test_each_tool_run_of_a_session_is_one_execute_tool_span(
    provider: TracerProvider, exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    search = FlakySearch()
    search.fail_with = "upstream answered 503"
    turns = [
        {
            "tool_calls": [
                {"name": "note_progress", "input": {"text": "started"}, "id": "t1"},
                {"name": "search", "input": {"query": "heat pumps"}, "id": "t2"},
            ]
        },
        {"text": "Done."},
    ]
    config = Settings(data_dir=tmp_path)
    engine = bootstrap_engine(
        config,
        llm=traced_llm(ScriptedLLM.from_turns(turns), provider),
        tools=traced_tools([*build_tools(config), search], provider),
        counter=CharRatioTokenCounter(),
        engine_settings=EngineSettings(model="claude-test-1"),
    )
    try:
        receipt = await engine.bridge(
            engine.sessions.start_session,
            workspace_id=uuid4(), owner_id=uuid4(), title="t", settings=SessionSettings.of({}),
        )  # fmt: skip
        sid = receipt.session_id
        await engine.scheduler.send_message(sid, "go")
        assert await engine.scheduler.wait(sid) == "completed"
    finally:
        engine.bridge.close()

    assert search.calls == ["heat pumps"]  # the wrapper ran the real tool
    tools = {s.name: s for s in finished(exporter, "execute_tool ")}
    assert sorted(tools) == ["execute_tool note_progress", "execute_tool search"]
    ok, failed = tools["execute_tool note_progress"], tools["execute_tool search"]
    assert dict(ok.attributes or {}) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "note_progress",
        "gen_ai.tool.call.id": "t1",
        "gen_ai.conversation.id": str(sid),
        "tokendance.session_id": str(sid),
    }
    assert ok.status.status_code is StatusCode.UNSET
    assert failed.status.status_code is StatusCode.ERROR
    assert (failed.attributes or {})["error.type"] == "application.ports.ToolExecutionError"
    assert (failed.attributes or {})["gen_ai.tool.call.id"] == "t2"
    chats = finished(exporter, "chat ")
    assert [s.name for s in chats] == ["chat claude-test-1"] * 2
    assert all((s.attributes or {})["tokendance.session_id"] == str(sid) for s in chats)


def test_a_traced_tool_keeps_what_the_registry_and_runner_read(provider: TracerProvider) -> None:
    search = FlakySearch()
    (traced,) = traced_tools([search], provider)
    assert (traced.name, traced.description, traced.Args) == (
        search.name, search.description, search.Args,
    )  # fmt: skip
    assert (traced.risky, traced.replayable, traced.timeout) == (False, False, 5.0)
    assert traced.spec() == search.spec()
    # A registry seeding another one (replay) does not wrap twice.
    (again,) = traced_tools(ToolRegistry([traced]), provider)
    assert again is traced


def test_without_an_endpoint_nothing_is_built_or_wrapped() -> None:
    assert tracer_provider_from_env({}) is None
    assert tracer_provider_from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": ""}) is None
    llm = ScriptedLLM.from_turns(TURNS)
    tools = build_tools(Settings())
    assert traced_llm(llm, None) is llm
    assert traced_tools(tools, None) is tools
    shutdown(None)


def test_an_endpoint_builds_an_otlp_provider_named_tokendance() -> None:
    provider = tracer_provider_from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9/"})
    assert provider is not None
    try:
        assert provider.resource.attributes["service.name"] == "tokendance"
    finally:
        provider.shutdown()  # nothing was recorded, so nothing is sent
    disabled = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "OTEL_SDK_DISABLED": "true"}
    assert tracer_provider_from_env(disabled) is None
