"""A local Anthropic Messages API: real HTTP, real streaming SSE, scripted replies.

The real SDK talks to it through `AsyncAnthropic(base_url=...)` (anthropic 2.x sends
through httpx2, which httpx mocks do not intercept, hence a socket). Each test plans
its replies, in order: a `Turn` streamed as Anthropic streams it (optionally cut off
after some events), or an `ErrorReply`. Every request is recorded for assertions.

Extended thinking as the API does it: a request that asks for thinking gets a thinking
block first (one the test planned, or one the fake makes up), each signed by the fake;
a later request that enables thinking must send each thinking block back with the
signature the fake gave it (redacted ones with their data unchanged), and its newest
assistant turn, if it used tools, must begin with one: otherwise a 400 as the API's.

    with serve_fake_anthropic() as fake:
        fake.plan(overloaded(), Turn((Text("Hello"),)))
        client = AsyncAnthropic(api_key=fake.api_key, base_url=fake.base_url)
"""

from __future__ import annotations

import json
import socket
import sys
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, cast
from urllib.parse import urlsplit

import pytest

from tests.fakes.anthropic_thinking import JSONObject, SignedThinking, thinks

SSEEvent = tuple[str, JSONObject]


@dataclass(frozen=True)
class Cite:
    """A citation of one of the request's `search_result` blocks (by its order in the
    request), sent as a `citations_delta` the way the API sends it."""

    search_result_index: int
    cited_text: str


@dataclass(frozen=True)
class Text:
    text: str
    pieces: int = 2  # text_delta events
    cites: tuple[Cite, ...] = ()


@dataclass(frozen=True)
class Thinking:
    thinking: str
    signature: str | None = None  # None: the fake signs it
    pieces: int = 2  # thinking_delta events, then one signature_delta


@dataclass(frozen=True)
class RedactedThinking:
    data: str  # sent whole in content_block_start, as the API does


@dataclass(frozen=True)
class ToolUse:
    id: str
    name: str
    input: dict[str, object]
    pieces: int = 3  # input_json_delta events with text, after an empty one


Block = Text | Thinking | RedactedThinking | ToolUse
Cut = Literal["reset", "eof", "overloaded_event"]


@dataclass(frozen=True)
class Turn:
    """A 200 streamed reply; `cut_after` stops it after that many SSE events.

    `cut`: "reset" closes the socket mid-body, "eof" ends the body cleanly with no
    `message_stop`, "overloaded_event" sends an `error` event as the API does.
    """

    blocks: tuple[Block, ...]
    stop_reason: str = "end_turn"
    input_tokens: int = 10
    output_tokens: int = 5
    cache_read_input_tokens: int | None = 0  # None: the field is left out
    cache_creation_input_tokens: int | None = 0
    model: str | None = None  # None: the requested model
    cut_after: int | None = None
    cut: Cut = "reset"


@dataclass(frozen=True)
class ErrorReply:
    status: int
    error_type: str
    message: str
    headers: tuple[tuple[str, str], ...] = ()


Reply = Turn | ErrorReply


def overloaded() -> ErrorReply:
    return ErrorReply(529, "overloaded_error", "Overloaded")


def rate_limited(retry_after: float | None = None) -> ErrorReply:
    headers = () if retry_after is None else (("retry-after", f"{retry_after:g}"),)
    return ErrorReply(
        429, "rate_limit_error", "Number of request tokens has exceeded your rate limit", headers
    )


def server_error() -> ErrorReply:
    return ErrorReply(500, "api_error", "Internal server error")


def bad_request(message: str) -> ErrorReply:
    return ErrorReply(400, "invalid_request_error", message)


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]  # names lower-cased
    body: JSONObject


@dataclass
class FakeAnthropic:
    """The server's script and what it saw; safe to use from the test's thread."""

    api_key: str
    base_url: str = ""
    requests: list[RecordedRequest] = field(default_factory=list)
    _replies: deque[Reply] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    thinking: SignedThinking = field(default_factory=SignedThinking)

    def plan(self, *replies: Reply) -> None:
        with self._lock:
            self._replies.extend(replies)

    @property
    def unused_replies(self) -> int:
        with self._lock:
            return len(self._replies)

    @property
    def bodies(self) -> list[JSONObject]:
        with self._lock:
            return [r.body for r in self.requests if r.path == "/v1/messages"]

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _next_reply(self) -> Reply | None:
        with self._lock:
            return self._replies.popleft() if self._replies else None


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fake: FakeAnthropic) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.fake = fake

    def handle_error(
        self, request: socket.socket | tuple[bytes, socket.socket], client_address: Any
    ) -> None:
        # A client that hangs up mid-stream (an abandoned turn) is expected here.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive and chunked bodies, as the real API
    timeout = 10  # an idle keep-alive connection must not hold a thread forever

    def setup(self) -> None:
        super().setup()
        # Each SSE event goes out when written, not when Nagle's algorithm allows.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: object) -> None:
        pass  # quiet test output; the recorded requests say what happened

    def do_POST(self) -> None:
        fake = cast(_Server, self.server).fake
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = urlsplit(self.path).path
        fake._record(RecordedRequest(path, headers, body if isinstance(body, dict) else {}))
        if path != "/v1/messages":
            return self._send_error(ErrorReply(404, "not_found_error", f"Not found: {path}"))
        if (
            headers.get("x-api-key") != fake.api_key
            and headers.get("authorization") != f"Bearer {fake.api_key}"
        ):
            return self._send_error(ErrorReply(401, "authentication_error", "invalid x-api-key"))
        if "anthropic-version" not in headers:
            return self._send_error(bad_request("anthropic-version: header is required"))
        problem = _problem(body)
        if problem is None and thinks(body):
            problem = fake.thinking.problem(cast(JSONObject, body)["messages"])
        if problem is not None:
            return self._send_error(bad_request(problem))
        reply = fake._next_reply()
        if reply is None:
            return self._send_error(ErrorReply(500, "api_error", "the fake has no reply planned"))
        if isinstance(reply, ErrorReply):
            return self._send_error(reply)
        return self._send_turn(reply, cast(JSONObject, body))

    def _send_error(self, reply: ErrorReply) -> None:
        payload = json.dumps(
            {"type": "error", "error": {"type": reply.error_type, "message": reply.message}}
        ).encode()
        self.send_response(reply.status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        self.send_header("request-id", "req_fake")
        for name, value in reply.headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def _send_turn(self, turn: Turn, body: JSONObject) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("request-id", "req_fake")
        self.end_headers()
        fake = cast(_Server, self.server).fake
        blocks = tuple(_signed(fake.thinking, b) for b in _thought(turn.blocks, thinks(body)))
        turn = replace(turn, blocks=blocks)
        events = _events(turn, turn.model or body["model"], search_results(body))
        for n, (name, data) in enumerate(events):
            if n == turn.cut_after:
                return self._cut(turn.cut)
            self._chunk(_sse(name, data))
        self._chunk(b"")

    def _cut(self, how: Cut) -> None:
        if how == "reset":
            # Mid chunked body: the client sees an incomplete read, as on a dropped link.
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        if how == "overloaded_event":
            error = {
                "type": "error",
                "error": {"type": "overloaded_error", "message": "Overloaded"},
            }
            self._chunk(_sse("error", error))
        self._chunk(b"")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))


def _problem(body: object) -> str | None:
    """The 400 message the real API would give for this body, for the checks we mirror."""
    if not isinstance(body, dict):
        return "body: must be a JSON object"
    if body.get("stream") is not True:
        return "this fake answers only streaming requests (stream: true)"
    for name, kind in (("model", str), ("max_tokens", int), ("messages", list)):
        if not isinstance(body.get(name), kind):
            return f"{name}: Field required"
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") == "enabled":
        budget = thinking.get("budget_tokens")
        if not isinstance(budget, int) or budget < 1024:
            return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
        if body["max_tokens"] <= budget:
            return "`max_tokens` must be greater than `thinking.budget_tokens`"
    results = search_results(body)
    if len({bool(r.get("citations", {}).get("enabled")) for r in results}) > 1:
        return "Citations must be enabled for all or none of the search results in a request"
    for r in results:
        if not r.get("source") or not any(t.get("text") for t in r.get("content", [])):
            return "search_result: source and non-empty text content are required"
    return None


def _thought(blocks: tuple[Block, ...], thinks: bool) -> tuple[Block, ...]:
    """A reply to a request that enables thinking begins with thinking, as the API's."""
    if not thinks or any(isinstance(b, Thinking | RedactedThinking) for b in blocks):
        return blocks
    return (Thinking("Let me think about what was asked."), *blocks)


def _signed(fake: SignedThinking, block: Block) -> Block:
    match block:
        case Thinking(thinking=thinking, signature=signature):
            return replace(block, signature=fake.sign(thinking, signature))
        case RedactedThinking(data=data):
            return RedactedThinking(fake.redact(data))
        case _:
            return block


def _events(turn: Turn, model: str, results: list[JSONObject]) -> list[SSEEvent]:
    usage: JSONObject = {"input_tokens": turn.input_tokens, "output_tokens": 1}
    if turn.cache_creation_input_tokens is not None:
        usage["cache_creation_input_tokens"] = turn.cache_creation_input_tokens
    if turn.cache_read_input_tokens is not None:
        usage["cache_read_input_tokens"] = turn.cache_read_input_tokens
    message: JSONObject = {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    events: list[SSEEvent] = [
        ("message_start", {"type": "message_start", "message": message}),
        ("ping", {"type": "ping"}),
    ]
    for index, block in enumerate(turn.blocks):
        events.extend(_block_events(index, block, results))
    delta = {"stop_reason": turn.stop_reason, "stop_sequence": None}
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": delta,
                "usage": {"output_tokens": turn.output_tokens},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def _block_events(index: int, block: Block, results: list[JSONObject]) -> list[SSEEvent]:
    start: JSONObject
    deltas: list[JSONObject]
    match block:
        case Text(text=text, pieces=n, cites=cites):
            start = {"type": "text", "text": ""} | ({"citations": []} if cites else {})
            deltas = [_citation_delta(c, results) for c in cites]
            deltas += [{"type": "text_delta", "text": p} for p in _split(text, n)]
        case Thinking(thinking=thinking, signature=signature, pieces=n):
            start = {"type": "thinking", "thinking": ""}
            deltas = [{"type": "thinking_delta", "thinking": p} for p in _split(thinking, n)]
            deltas.append({"type": "signature_delta", "signature": signature or ""})
        case RedactedThinking(data=data):
            start = {"type": "redacted_thinking", "data": data}
            deltas = []
        case ToolUse(id=id_, name=name, input=input_, pieces=n):
            start = {"type": "tool_use", "id": id_, "name": name, "input": {}}
            parts = ["", *_split(json.dumps(input_), n)]
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in parts]
    return [
        (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": start},
        ),
        *(
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
            for d in deltas
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": index}),
    ]


def _citation_delta(cite: Cite, results: list[JSONObject]) -> JSONObject:
    result = results[cite.search_result_index]  # an IndexError: the test cited nothing sent
    citation = {
        "type": "search_result_location",
        "cited_text": cite.cited_text,
        "source": result["source"],
        "title": result.get("title"),
        "search_result_index": cite.search_result_index,
        "start_block_index": 0,
        "end_block_index": 1,
    }
    return {"type": "citations_delta", "citation": citation}


def search_results(body: JSONObject) -> list[JSONObject]:
    """The request's `search_result` blocks, in the order citations number them."""
    found: list[JSONObject] = []
    for message in body.get("messages", []):
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            inner = block.get("content") if block.get("type") == "tool_result" else [block]
            for item in inner if isinstance(inner, list) else []:
                if item.get("type") == "search_result":
                    found.append(item)
    return found


def _split(text: str, pieces: int) -> list[str]:
    size = max(1, -(-len(text) // max(1, pieces)))
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _sse(name: str, data: JSONObject) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


@contextmanager
def serve_fake_anthropic(*, api_key: str = "sk-ant-test") -> Iterator[FakeAnthropic]:
    """Run the fake on a free loopback port for the duration of the block."""
    fake = FakeAnthropic(api_key)
    server = _Server(fake)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    fake.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def fake_anthropic() -> Iterator[FakeAnthropic]:
    """The fake, running; import this into a conftest to share it."""
    with serve_fake_anthropic() as fake:
        yield fake
