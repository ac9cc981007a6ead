"""Spans reach an OTLP/HTTP receiver when `OTEL_EXPORTER_OTLP_ENDPOINT` names one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from adapters.llm.scripted import ScriptedLLM
from adapters.observability.telemetry import shutdown, traced_llm, tracer_provider_from_env
from domain.conversation import SESSION_KEY, Message, ModelRequest, TextBlock
from tests.fakes.otlp_receiver import Receiver, receiving

pytestmark = pytest.mark.integration


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with receiving() as server:
        yield server


async def test_a_model_call_is_exported_on_shutdown(receiver: Receiver) -> None:
    provider = tracer_provider_from_env({"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url + "/"})
    assert provider is not None
    llm = traced_llm(
        ScriptedLLM.from_turns([{"text": "hi", "usage": {"input": 7, "output": 2}}]), provider
    )
    request = ModelRequest(
        "sys", (), (Message("user", (TextBlock("hi"),)),), model="claude-test-1",
        metadata={SESSION_KEY: "s-1"},
    )  # fmt: skip
    _ = [item async for item in llm.stream(request)]
    assert receiver.received == []  # batched: nothing sent yet
    shutdown(provider)  # flushes the batch

    ((path, content_type, body),) = receiver.received
    assert (path, content_type) == ("/v1/traces", "application/x-protobuf")
    export = ExportTraceServiceRequest.FromString(body)
    (resource_spans,) = export.resource_spans
    resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
    assert resource["service.name"] == "tokendance"
    ((span,),) = [scope.spans for scope in resource_spans.scope_spans]
    assert span.name == "chat claude-test-1"
    attributes = {a.key: a.value for a in span.attributes}
    assert attributes["gen_ai.usage.input_tokens"].int_value == 7
    assert attributes["gen_ai.usage.output_tokens"].int_value == 2
    assert attributes["tokendance.session_id"].string_value == "s-1"
