"""One trace from the API through the worker: the request, the run, its model calls.

An API replica and a worker export to a loopback OTLP receiver. A chat sent to the API
is a server span for its route; the worker's `invoke_agent tokendance` span continues
that trace (the run queue's message carried it) with the session as the conversation
id, and the run's `chat {model}` spans are its children. The worker logs JSON: its
line about the run carries the same trace id, and the run's span id.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import cast

import msgspec
import pytest

from tests.e2e.chat_helpers import chat, new_session, user
from tests.e2e.client import is_event, wait_until
from tests.e2e.conftest import StartServer
from tests.fakes.otlp_receiver import ReceivedSpan, Receiver, receiving

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CHAT_ROUTE = "/api/v1/chat/{session_id}/message"


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with receiving() as server:
        yield server


def test_a_chat_is_one_trace_from_the_api_through_the_worker(
    start_server: StartServer, receiver: Receiver, tmp_path: Path
) -> None:
    otel = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "100"}
    for role in ("relay", "projections"):
        start_server("chat", role=role, extra_env=otel)
    worker_log = tmp_path / "worker.err"
    json_logs = {**otel, "TOKENDANCE_LOG_FORMAT": "json", "TOKENDANCE_LOG_LEVEL": "INFO"}
    start_server("chat", role="worker", extra_env=json_logs, stderr=worker_log)
    api = start_server("chat", role="api", extra_env=otel)
    account, http = user(api.client(), "traced@example.com")
    sid = str(new_session(http, account["workspace_id"])["id"])
    done = chat(http, sid, "hello", until=is_event("done"), timeout=60)
    assert done.events[-1].data["status"] == "completed"

    def everything() -> list[ReceivedSpan] | None:
        spans = receiver.spans()
        names = {s.name for s in spans}
        ready = {f"POST {CHAT_ROUTE}", "invoke_agent tokendance"} <= names
        return spans if ready and any(n.startswith("chat ") for n in names) else None

    try:
        spans = cast(list[ReceivedSpan], wait_until(everything, timeout=30))
    except AssertionError:
        raise AssertionError(sorted({s.name for s in receiver.spans()})) from None
    (request,) = [s for s in spans if s.attributes.get("http.route") == CHAT_ROUTE]
    assert request.name == f"POST {CHAT_ROUTE}"
    (run,) = [s for s in spans if s.name == "invoke_agent tokendance"]
    assert run.trace_id == request.trace_id  # the worker went on with the request's trace
    assert run.parent_id != ""
    assert run.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert run.attributes["gen_ai.conversation.id"] == sid
    models = [s for s in spans if s.name.startswith("chat ")]
    assert models and all(s.parent_id == run.span_id for s in models), models
    assert all(s.trace_id == request.trace_id for s in models)

    lines = [msgspec.json.decode(line) for line in worker_log.read_text().splitlines()]
    (ended,) = [e for e in lines if e.get("run_id") and "completed" in e["message"]]
    assert ended["session_id"] == sid
    assert (ended["trace_id"], ended["span_id"]) == (request.trace_id, run.span_id)
