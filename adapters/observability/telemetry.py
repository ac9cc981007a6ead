"""OpenTelemetry traces of model calls and tool runs, in the GenAI semantic conventions.

Wrappers, so the application never imports OpenTelemetry: `TracedLLM` is an `LLM` whose
every call is a `chat {model}` span carrying the turn's usage; `traced_tools` gives each
tool an `execute_tool {name}` span per run. `tracer_provider_from_env` builds an SDK
provider exporting over OTLP/HTTP only when `OTEL_EXPORTER_OTLP_ENDPOINT` is set; without
one the wrappers hand back what they were given and no SDK code is loaded at all.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer, TracerProvider

from application.ports import LLM, LLMError
from application.tools.base import AnyTool, Tool, ToolContext, ToolOutput
from domain.conversation import SESSION_KEY, ModelRequest, ModelTurn, StreamItem, ToolSpec
from domain.errors import InvalidCommand
from domain.model_names import parse_model_name

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider

SERVICE_NAME = "tokendance"
SCOPE = "tokendance"
FLUSH_TIMEOUT_MS = 10_000


def tracer_provider_from_env(environ: Mapping[str, str]) -> SdkTracerProvider | None:
    """A provider exporting in batches over OTLP/HTTP, or None when no endpoint is set.

    The endpoint is `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` if set, else
    `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces` (as the OTLP spec says); headers,
    timeout and TLS options are read by the exporter from the process environment.
    `OTEL_SDK_DISABLED=true` turns it off like no endpoint does.
    """
    base = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    if not base or environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return None
    # Imported here: a process without an endpoint never loads the SDK or the exporter.
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider as SdkProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    endpoint = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip()
    endpoint = endpoint or f"{base.removesuffix('/')}/v1/traces"
    service = environ.get("OTEL_SERVICE_NAME", "").strip() or SERVICE_NAME
    provider = SdkProvider(resource=Resource.create({"service.name": service}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    return provider


def shutdown(provider: SdkTracerProvider | None) -> None:
    """Export the spans still queued, then stop the exporter (once, at process exit)."""
    if provider is None:
        return
    provider.force_flush(FLUSH_TIMEOUT_MS)
    provider.shutdown()


def traced_llm(llm: LLM, provider: TracerProvider | None) -> LLM:
    """`llm` with a span per call, or `llm` itself when there is no provider."""
    if provider is None:
        return llm
    return TracedLLM(llm, provider.get_tracer(SCOPE))


def traced_tools(tools: Iterable[AnyTool], provider: TracerProvider | None) -> Iterable[AnyTool]:
    """The tools with a span per run, or `tools` itself when there is no provider."""
    if provider is None:
        return tools
    tracer = provider.get_tracer(SCOPE)
    return [_traced_tool(tool, tracer) for tool in tools]


class TracedLLM:
    """`LLM` that makes each call of the inner model a `chat {model}` client span."""

    def __init__(self, inner: LLM, tracer: Tracer, *, provider: str = "anthropic") -> None:
        self.inner = inner
        self._tracer = tracer
        self._provider = provider

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        items = self.inner.stream(request)
        model = request.model or "unknown"
        # Not made the current span: it would stay current in the consumer between items.
        span = self._tracer.start_span(
            f"chat {model}", kind=SpanKind.CLIENT, attributes=self._request_attributes(request)
        )
        try:
            async for item in items:
                if isinstance(item, ModelTurn):
                    _record_turn(span, item)
                yield item
        except LLMError as e:
            _record_error(span, e, e.code)
            raise
        except BaseException as e:
            if not isinstance(e, GeneratorExit):  # the consumer stopped early: no error
                _record_error(span, e, _type_name(e))
            raise
        finally:
            span.end()
            await _close(items)

    def _request_attributes(self, request: ModelRequest) -> dict[str, str | int]:
        provider, model = self._provider, request.model or "unknown"
        try:
            if request.model:
                named = parse_model_name(request.model)
                provider, model = named.provider, named.model
        except InvalidCommand:
            pass  # the router refuses it; the span still says what was asked
        attributes: dict[str, str | int] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.system": provider,  # the older name of gen_ai.provider.name
            "gen_ai.provider.name": provider,
            "gen_ai.request.model": model,
        }
        if request.max_tokens is not None:
            attributes["gen_ai.request.max_tokens"] = request.max_tokens
        session = request.metadata.get(SESSION_KEY)
        if session:
            attributes["gen_ai.conversation.id"] = session
            attributes["tokendance.session_id"] = session
        return attributes


def _record_turn(span: Span, turn: ModelTurn) -> None:
    usage = turn.usage
    span.set_attributes(
        {
            "gen_ai.response.model": turn.model,
            "gen_ai.response.finish_reasons": [turn.stop_reason],
            # The conventions count every input token here, cached or not; our `Usage`
            # (like the Anthropic API) counts cache reads and writes apart from the rest.
            "gen_ai.usage.input_tokens": (
                usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
            ),
            "gen_ai.usage.output_tokens": usage.output_tokens,
            "gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens,
            "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_tokens,
        }
    )


class _TracedTool(Tool[Any]):
    """A tool whose every run is an `execute_tool {name}` span; the rest is the inner tool's.

    Built per tool by `_traced_tool`, which copies the inner tool's class attributes.
    """

    def __init__(self, inner: AnyTool, tracer: Tracer) -> None:
        self.inner = inner
        self._tracer = tracer

    async def run(self, args: Any, context: ToolContext) -> str | ToolOutput:
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": self.name,
            "gen_ai.tool.call.id": context.tool_use_id,
            "gen_ai.conversation.id": str(context.session_id),
            "tokendance.session_id": str(context.session_id),
        }
        with self._tracer.start_as_current_span(
            f"execute_tool {self.name}",
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            record_exception=False,
            set_status_on_exception=False,
        ) as span:
            try:
                return await self.inner.run(args, context)
            except BaseException as e:  # a timeout reaches the tool as a cancellation
                _record_error(span, e, _type_name(e))
                raise

    def describe(self, args: Any) -> str:
        return self.inner.describe(args)

    def spec(self) -> ToolSpec:
        return self.inner.spec()


def _traced_tool(tool: AnyTool, tracer: Tracer) -> AnyTool:
    if isinstance(tool, _TracedTool):  # a registry seeding another one: wrap once
        return tool

    # What the registry and the runner read are class attributes, so a class per tool.
    class Traced(_TracedTool):
        name = tool.name
        description = tool.description
        Args = tool.Args
        risky = tool.risky
        replayable = tool.replayable
        timeout = tool.timeout

    Traced.__name__ = Traced.__qualname__ = f"Traced{type(tool).__name__}"
    return Traced(tool, tracer)


def _record_error(span: Span, error: BaseException, error_type: str) -> None:
    span.set_attribute("error.type", error_type)
    span.set_status(Status(StatusCode.ERROR, str(error) or error_type))
    span.record_exception(error)


def _type_name(error: BaseException) -> str:
    """The exception's fully qualified class name, as the conventions ask for `error.type`."""
    cls = type(error)
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


async def _close(items: AsyncIterator[StreamItem]) -> None:
    # The port promises an async iterator; the adapters' are generators, closed at once
    # here rather than whenever the garbage collector finds them.
    aclose = getattr(items, "aclose", None)
    if aclose is not None:
        await aclose()
