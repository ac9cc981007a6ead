"""Traces beyond single calls: a span per HTTP request, one per run, one trace across processes.

A request's root span comes from OpenTelemetry's own ASGI instrumentation (through
litestar's plugin); once routed it is named by its route template (`RequestSpans`), not
the path with its ids, and carries the caller's user id. A run is an `invoke_agent tokendance`
span (the GenAI conventions' agent operation) with the session as the conversation id;
its model (`chat {model}`) and tool (`execute_tool {name}`) spans nest in it. When an
API replica hands a run to a worker, the W3C `traceparent` of the request rides in the
run queue message's headers, so the worker's run span continues the request's trace.
Without a tracer provider (no `OTEL_EXPORTER_OTLP_ENDPOINT`) none of this is built.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from uuid import UUID

from litestar.enums import ScopeType
from litestar.middleware import ASGIMiddleware
from litestar.plugins.opentelemetry import OpenTelemetryConfig, OpenTelemetryPlugin
from litestar.types import ASGIApp, Message, Receive, Scope, Send
from opentelemetry import context, propagate, trace
from opentelemetry.trace import SpanKind, Tracer, TracerProvider

from adapters.observability.telemetry import SCOPE

AGENT = "tokendance"


class RunSpans:
    """`RunTracing`: each run an `invoke_agent` span, current while the run goes on."""

    def __init__(self, tracer: Tracer) -> None:
        self._tracer = tracer

    @contextmanager
    def invoke(self, session_id: UUID, run_id: UUID) -> Iterator[object]:
        attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": AGENT,
            "gen_ai.conversation.id": str(session_id),
            "tokendance.run_id": str(run_id),
        }
        with self._tracer.start_as_current_span(
            f"invoke_agent {AGENT}", kind=SpanKind.INTERNAL, attributes=attributes
        ) as span:
            yield span


def run_tracing(provider: TracerProvider | None) -> RunSpans | None:
    return None if provider is None else RunSpans(provider.get_tracer(SCOPE))


def http_tracing(provider: TracerProvider | None) -> list[OpenTelemetryPlugin]:
    """The app's plugins for a root span per request (none without a provider)."""
    if provider is None:
        return []
    config = OpenTelemetryConfig(tracer_provider=provider, exclude_spans=["receive", "send"])
    return [OpenTelemetryPlugin(config)]


def request_spans(provider: TracerProvider | None) -> list[ASGIMiddleware]:
    """The app's middleware that names each request span (none without a provider)."""
    return [] if provider is None else [RequestSpans()]


class RequestSpans(ASGIMiddleware):
    """The request's span named `METHOD /route/{template}` once routed, with its caller."""

    scopes = (ScopeType.HTTP,)

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        span = trace.get_current_span()
        if not span.is_recording():
            await next_app(scope, receive, send)
            return

        async def named(message: Message) -> None:
            # As the response starts: the span ends with the response's last byte, before
            # this middleware's own call returns.
            if message["type"] == "http.response.start":
                route = scope.get("path_template")
                if route:
                    span.update_name(f"{scope.get('method', '')} {route}")
                    span.set_attribute("http.route", str(route))
                user_id = getattr(scope.get("user"), "user_id", None)
                if user_id is not None:
                    span.set_attribute("enduser.id", str(user_id))
            await send(message)

        await next_app(scope, receive, named)


def trace_headers() -> dict[str, str]:
    """The current trace context as message headers (empty outside a recording span)."""
    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    return carrier


@contextmanager
def continued(headers: Mapping[str, str] | None) -> Iterator[None]:
    """The trace context a message carried, current inside (tasks started here keep it)."""
    token = context.attach(propagate.extract(dict(headers or {})))
    try:
        yield
    finally:
        context.detach(token)
