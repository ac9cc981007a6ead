"""A local Tavily Search API: real HTTP, Tavily's JSON, a small corpus ranked by term overlap.

The real `AsyncTavilyClient` talks to it through `api_base_url=`: it POSTs the search as
JSON to `/search`, the key in `Authorization: Bearer <key>`, and reads `results` back.
The corpus is `tests/fixtures/search_corpus.json`. A test can make the next requests
fail with a status (429, 432, ...) or make every answer wait, and sees every request
with when it started and finished (to tell whether searches overlapped).

    with serve_fake_tavily() as fake:
        fake.fail_next(429)
        search = TavilySearch(fake.api_key, base_url=fake.base_url)

With `link_pages=True` result URLs point back at the fake (`/pages/<host><path>`), which
serves each document as a small HTML page, so a test can read what it found.
"""

from __future__ import annotations

import html
import json
import re
import socket
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlsplit

import pytest

CORPUS = Path(__file__).parent.parent / "fixtures" / "search_corpus.json"

# Decoded JSON exactly as the client sent it: the point is to see what was sent.
JSONObject = dict[str, Any]

# Tavily's own words for its refusals (its error body is {"detail": {"error": ...}}).
DETAILS = {
    400: "Invalid request.",
    401: "Unauthorized: missing or invalid API key.",
    403: "Forbidden.",
    429: "Your request has been blocked due to excessive requests. Please reduce rate of requests.",
    432: "This request exceeds your plan's set usage limit. "
    "Please upgrade your plan or contact support@tavily.com",
    433: "This request exceeds the pay-as-you-go limit. "
    "You can increase your limit on the Tavily dashboard or contact support@tavily.com",
    500: "Internal server error.",
}

_TOPICS = {"general", "news", "finance"}
_TIME_RANGES = {"day", "week", "month", "year", "d", "w", "m", "y"}
_DEPTHS = {"basic", "advanced", "fast", "ultra-fast"}
_STOPWORDS = {"a", "an", "and", "are", "do", "for", "how", "in", "is", "it", "of", "on", "the"}
_STOPWORDS |= {"to", "what", "with"}


@dataclass(frozen=True)
class Document:
    """One page of the corpus: `content` is the snippet Tavily returns, `body` the page."""

    url: str
    title: str
    content: str
    body: str
    published_date: str | None = None

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname or ""

    def terms(self) -> set[str]:
        return _terms(f"{self.title} {self.content} {self.body}")


def load_corpus(path: Path = CORPUS) -> tuple[Document, ...]:
    raw = json.loads(path.read_text())
    return tuple(Document(**d) for d in raw["documents"])


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    body: JSONObject
    status: int
    started: float  # time.monotonic() when the request was read
    finished: float  # ... and when its answer was ready (after any delay)


@dataclass(frozen=True)
class _Failure:
    status: int
    detail: str


@dataclass
class FakeTavily:
    """The server's corpus, its planned failures and what it saw; safe from any thread."""

    api_key: str
    corpus: tuple[Document, ...]
    base_url: str = ""
    pages_base_url: str | None = None  # None: results carry the corpus's own URLs
    delay: float = 0.0  # seconds each /search waits before answering
    _requests: list[RecordedRequest] = field(default_factory=list)
    _failures: deque[_Failure] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def fail_next(self, status: int, *, times: int = 1, detail: str | None = None) -> None:
        """The next `times` searches (with a good key) answer `status` and Tavily's words."""
        failure = _Failure(status, DETAILS.get(status, "error") if detail is None else detail)
        with self._lock:
            self._failures.extend([failure] * times)

    @property
    def searches(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self._requests if r.path == "/search"]

    def url_of(self, document: Document) -> str:
        """Where results say `document` is (the fake itself when pages are linked)."""
        if self.pages_base_url is None:
            return document.url
        parts = urlsplit(document.url)
        return f"{self.pages_base_url}/{parts.netloc}{parts.path}"

    def document_at(self, page_path: str) -> Document | None:
        """The document a `/pages/<host><path>` path names."""
        for d in self.corpus:
            parts = urlsplit(d.url)
            if page_path == f"/pages/{parts.netloc}{parts.path}":
                return d
        return None

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _next_failure(self) -> _Failure | None:
        with self._lock:
            return self._failures.popleft() if self._failures else None


def overlapping(requests: list[RecordedRequest]) -> bool:
    """True when all the requests were being answered at one same moment."""
    return max(r.started for r in requests) < min(r.finished for r in requests)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fake: FakeTavily) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.fake = fake

    def handle_error(
        self, request: socket.socket | tuple[bytes, socket.socket], client_address: Any
    ) -> None:
        # A client that gave up waiting (a timeout test) has hung up by the time we answer.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the real API
    timeout = 10  # an idle keep-alive connection must not hold a thread forever

    def log_message(self, format: str, *args: object) -> None:
        pass  # quiet test output; the recorded requests say what happened

    @property
    def fake(self) -> FakeTavily:
        return cast(_Server, self.server).fake

    def do_POST(self) -> None:
        started = time.monotonic()
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        headers = {k.lower(): v for k, v in self.headers.items()}
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = urlsplit(self.path).path
        if path == "/search" and self.fake.delay:
            time.sleep(self.fake.delay)
        status, payload = self._answer(path, headers, body, started)
        self.fake._record(
            RecordedRequest(
                "POST", path, headers, body if isinstance(body, dict) else {}, status,
                started, time.monotonic(),
            )
        )  # fmt: skip
        self._send(status, "application/json", json.dumps(payload).encode())

    def do_GET(self) -> None:
        started = time.monotonic()
        path = urlsplit(self.path).path
        document = self.fake.document_at(path)
        status = 404 if document is None else 200
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.fake._record(
            RecordedRequest("GET", path, headers, {}, status, started, time.monotonic())
        )
        if document is None:
            return self._send(404, "text/plain; charset=utf-8", b"not found")
        self._send(200, "text/html; charset=utf-8", _page(document).encode())

    def _answer(
        self, path: str, headers: dict[str, str], body: object, started: float
    ) -> tuple[int, JSONObject]:
        if path != "/search":
            return 404, {"detail": {"error": f"Not Found: {path}"}}
        if headers.get("authorization") != f"Bearer {self.fake.api_key}":
            return 401, {"detail": {"error": DETAILS[401]}}
        failure = self.fake._next_failure()
        if failure is not None:
            return failure.status, {"detail": {"error": failure.detail}}
        problem = _problem(body)
        if problem is not None:
            return 400, {"detail": {"error": problem}}
        request = cast(JSONObject, body)
        return 200, {
            "query": request["query"],
            "follow_up_questions": None,
            "answer": None,
            "images": [],
            "results": _results(self.fake, request),
            "response_time": round(time.monotonic() - started, 2),
            "request_id": str(uuid.uuid4()),
        }

    def _send(self, status: int, content_type: str, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


def _problem(body: object) -> str | None:
    """The 400 message the real API would give for this body, for the checks we mirror."""
    if not isinstance(body, dict):
        return "Request body must be a JSON object."
    query = body.get("query")
    if not isinstance(query, str) or not query.strip():
        return "Query is missing."
    if len(query) > 400:
        return "Query is too long. Max query length is 400 characters."
    max_results = body.get("max_results", 5)
    if not isinstance(max_results, int) or not 0 <= max_results <= 20:
        return "max_results must be between 0 and 20."
    for name, allowed in (
        ("topic", _TOPICS),
        ("time_range", _TIME_RANGES),
        ("search_depth", _DEPTHS),
    ):
        if name in body and body[name] not in allowed:
            return f"Invalid {name}. Must be one of: {', '.join(sorted(allowed))}."
    for name in ("include_domains", "exclude_domains"):
        domains = body.get(name, [])
        if not isinstance(domains, list) or not all(isinstance(d, str) for d in domains):
            return f"{name} must be a list of strings."
    return None


def _results(fake: FakeTavily, request: JSONObject) -> list[JSONObject]:
    """The corpus ranked by the share of query terms each document has, best first."""
    wanted = _terms(request["query"])
    include = [_bare(d) for d in request.get("include_domains", [])]
    exclude = [_bare(d) for d in request.get("exclude_domains", [])]
    ranked: list[tuple[float, int, Document]] = []
    for index, document in enumerate(fake.corpus):
        if include and not any(_on(document.host, d) for d in include):
            continue
        if any(_on(document.host, d) for d in exclude):
            continue
        score = len(wanted & document.terms()) / len(wanted) if wanted else 0.0
        if score > 0:
            ranked.append((score, index, document))
    ranked.sort(key=lambda r: (-r[0], r[1]))
    raw = request.get("include_raw_content") not in (None, False)
    results = []
    for score, _, document in ranked[: request.get("max_results", 5)]:
        result: JSONObject = {
            "url": fake.url_of(document),
            "title": document.title,
            "content": document.content,
            "score": round(score, 4),
            "raw_content": document.body if raw else None,
        }
        # As Tavily: a publication date only in news results.
        if request.get("topic") == "news" and document.published_date:
            result["published_date"] = document.published_date
        results.append(result)
    return results


def _terms(text: str) -> set[str]:
    return {t for t in re.findall(r"[a-z0-9]+", text.lower()) if t not in _STOPWORDS}


def _bare(domain: str) -> str:
    domain = domain.strip().lower()
    return domain.removeprefix("www.")


def _on(host: str, domain: str) -> bool:
    host = _bare(host)
    return host == domain or host.endswith("." + domain)


def _page(document: Document) -> str:
    title = html.escape(document.title)
    return (
        f"<!doctype html><html><head><title>{title}</title></head>"
        f"<body><h1>{title}</h1><p>{html.escape(document.body)}</p></body></html>"
    )


@contextmanager
def serve_fake_tavily(
    *, api_key: str = "tvly-test-key", link_pages: bool = False, corpus_path: Path = CORPUS
) -> Iterator[FakeTavily]:
    """Run the fake on a free loopback port for the duration of the block."""
    fake = FakeTavily(api_key, load_corpus(corpus_path))
    server = _Server(fake)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    fake.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    if link_pages:
        fake.pages_base_url = f"{fake.base_url}/pages"
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def fake_tavily() -> Iterator[FakeTavily]:
    """The fake, running; import this into a conftest to share it."""
    with serve_fake_tavily() as fake:
        yield fake
