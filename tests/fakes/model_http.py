"""What the OpenAI and Gemini fakes share: a loopback HTTP server in a thread that
records each request, answers planned replies in order (or a default), and writes
JSON errors and SSE streams the way the vendors do.

A prefix cache as the vendors' works: each request's cacheable text is compared with
every earlier request's, and the longest common prefix (in whole blocks of ~4 chars a
token) counts as cached tokens, so a byte-stable prefix shows up as cache reads.
"""

from __future__ import annotations

import json
import socket
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Generic, TypeVar

JSONObject = dict[str, Any]
R = TypeVar("R")

CACHE_BLOCK = 16  # tokens: cached prefixes are counted in whole blocks


def split_text(text: str, pieces: int) -> list[str]:
    """`text` in about `pieces` chunks, as a vendor streams it."""
    if not text:
        return []
    size = max(1, -(-len(text) // max(pieces, 1)))
    return [text[i : i + size] for i in range(0, len(text), size)]


def tokens(text: str) -> int:
    return max(len(text) // 4, 1) if text else 0


@dataclass(frozen=True)
class Recorded:
    path: str
    query: str
    headers: dict[str, str]
    raw: bytes
    body: JSONObject


@dataclass
class FakeModelServer(Generic[R]):
    """Planned replies, recorded requests and the prefix cache of one fake vendor."""

    api_key: str
    base_url: str = ""
    default: R | None = None
    requests: list[Recorded] = field(default_factory=list)
    _replies: deque[R] = field(default_factory=deque)
    _prefixes: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def plan(self, *replies: R) -> None:
        with self._lock:
            self._replies.extend(replies)

    @property
    def unused_replies(self) -> int:
        with self._lock:
            return len(self._replies)

    @property
    def bodies(self) -> list[JSONObject]:
        with self._lock:
            return [r.body for r in self.requests]

    def record(self, request: Recorded) -> None:
        with self._lock:
            self.requests.append(request)

    def next_reply(self) -> R | None:
        with self._lock:
            return self._replies.popleft() if self._replies else self.default

    def cached_tokens(self, cacheable: str) -> int:
        """Tokens of `cacheable` an earlier request's prefix covers; then remember it."""
        with self._lock:
            best = max((_common(cacheable, p) for p in self._prefixes), default=0)
            self._prefixes.append(cacheable)
        return tokens(cacheable[:best]) // CACHE_BLOCK * CACHE_BLOCK


def _common(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class ModelHandler(BaseHTTPRequestHandler):
    """Reads and records the request; subclasses answer it in `answer`."""

    protocol_version = "HTTP/1.1"
    fake: FakeModelServer[Any]

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self.answer(self._record(b""))

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        self.answer(self._record(raw))

    def _record(self, raw: bytes) -> Recorded:
        path, _, query = self.path.partition("?")
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {}
        headers = {k.lower(): v for k, v in self.headers.items()}
        recorded = Recorded(path, query, headers, raw, body if isinstance(body, dict) else {})
        self.fake.record(recorded)
        return recorded

    def answer(self, request: Recorded) -> None:
        raise NotImplementedError

    def send_json(
        self, status: int, payload: object, headers: dict[str, str] | None = None
    ) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def send_sse(self, events: list[bytes], cut_after: int | None = None) -> None:
        """Each of `events` as one SSE frame; `cut_after`: the connection drops after so
        many frames, without the stream's end."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("connection", "close")
        self.end_headers()
        for i, event in enumerate(events):
            if cut_after is not None and i >= cut_after:
                break
            self.wfile.write(event)
            self.wfile.flush()
        self.close_connection = True


def data_frame(payload: object, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(payload)}\n\n".encode()


@contextmanager
def serving(fake: FakeModelServer[Any], handler: type[ModelHandler], path: str) -> Iterator[None]:
    """Serve `fake` on a free loopback port for the block; its base URL ends in `path`."""
    bound = type("BoundHandler", (handler,), {"fake": fake})
    server = ThreadingHTTPServer(("127.0.0.1", 0), bound)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    fake.base_url = f"http://127.0.0.1:{server.server_address[1]}{path}"
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
