"""A loopback OTLP/HTTP trace receiver that keeps what it is sent (the collector's wire)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest


@dataclass(frozen=True)
class ReceivedSpan:
    service: str
    name: str
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict[str, object]


class Receiver(ThreadingHTTPServer):
    """Answers every export with 200, as a collector does, and keeps the bodies."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.received: list[tuple[str, str, bytes]] = []  # path, content type, body

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def spans(self) -> list[ReceivedSpan]:
        """Every span received so far, decoded."""
        found = []
        for _, _, body in list(self.received):
            for resource in ExportTraceServiceRequest.FromString(body).resource_spans:
                service = next(
                    (a.value.string_value for a in resource.resource.attributes
                     if a.key == "service.name"), "",
                )  # fmt: skip
                for scope in resource.scope_spans:
                    for span in scope.spans:
                        found.append(
                            ReceivedSpan(
                                service, span.name, span.trace_id.hex(), span.span_id.hex(),
                                span.parent_span_id.hex(),
                                {a.key: _value(a.value) for a in span.attributes},
                            )
                        )  # fmt: skip
        return found


def _value(value: object) -> object:
    kind = value.WhichOneof("value")  # type: ignore[attr-defined]
    return getattr(value, kind) if kind else None


class _Handler(BaseHTTPRequestHandler):
    server: Receiver

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.server.received.append((self.path, self.headers.get("Content-Type", ""), body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass


@contextmanager
def receiving() -> Iterator[Receiver]:
    server = Receiver()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
