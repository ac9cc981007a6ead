"""A local research web: Tavily's Search API and the pages it finds, on 127.0.0.1.

`tokendance demo` runs a research session with no key and no network against it: the
real `AsyncTavilyClient` POSTs its searches to `/search` (the key in `Authorization:
Bearer <key>`, the query as JSON) and gets Tavily's JSON back, a shipped corpus ranked by
how many of the query's terms each document has; each result's URL is a page of this
server (`/pages/<host><path>`, for a document whose own URL is `https://<host><path>`),
served as small HTML so `read_url` can read it.

    with serve_local_web() as web:
        search = TavilySearch(web.api_key, base_url=web.base_url)

The corpus (`local_web_corpus.json`) is invented demo content about heat pumps in cold
climates. The test suite's fake Tavily builds on this module (same wire format, ranking
and pages) and adds planned failures, delays and a record of requests.
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
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar, cast
from urllib.parse import urlsplit

CORPUS = Path(__file__).with_name("local_web_corpus.json")
DEMO_KEY = "tvly-local-demo"

# A decoded JSON object as a client sent it, or as Tavily answers.
JSONObject = dict[str, Any]

# Tavily's own words (its error body is {"detail": {"error": ...}}).
UNAUTHORIZED = "Unauthorized: missing or invalid API key."

_TOPICS = {"general", "news", "finance"}
_TIME_RANGES = {"day", "week", "month", "year", "d", "w", "m", "y"}
_DEPTHS = {"basic", "advanced", "fast", "ultra-fast"}
_STOPWORDS = {"a", "an", "and", "are", "do", "for", "how", "in", "is", "it", "of", "on", "the"}
_STOPWORDS |= {"to", "what", "with"}


@dataclass(frozen=True)
class Document:
    """One page of the corpus: `content` is the snippet Tavily returns, `body` the page
    (paragraphs separated by blank lines)."""

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
    """The documents of a corpus file: `{"documents": [{url, title, content, body, ...}]}`."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    return tuple(Document(**d) for d in raw["documents"])


@dataclass
class LocalWeb:
    """A corpus as a Tavily search service and as pages: the answer to each request.

    `base_url` is set once the server listens; with `pages_base_url` set, results point
    at the pages served here rather than at the corpus's own URLs.
    """

    api_key: str
    corpus: tuple[Document, ...]
    base_url: str = ""
    pages_base_url: str | None = None

    def url_of(self, document: Document) -> str:
        """Where results say `document` is (this server when pages are linked)."""
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

    def authorized(self, headers: dict[str, str]) -> bool:
        return headers.get("authorization") == f"Bearer {self.api_key}"

    def answer_post(
        self, path: str, headers: dict[str, str], body: object
    ) -> tuple[int, JSONObject]:
        """Status and JSON body for a POST (`headers` with lower-case names)."""
        started = time.monotonic()
        if path != "/search":
            return 404, {"detail": {"error": f"Not Found: {path}"}}
        if not self.authorized(headers):
            return 401, {"detail": {"error": UNAUTHORIZED}}
        problem = _problem(body)
        if problem is not None:
            return 400, {"detail": {"error": problem}}
        request = cast(JSONObject, body)
        return 200, {
            "query": request["query"],
            "follow_up_questions": None,
            "answer": None,
            "images": [],
            "results": self.results(request),
            "response_time": round(time.monotonic() - started, 2),
            "request_id": str(uuid.uuid4()),
        }

    def answer_get(self, path: str, headers: dict[str, str]) -> tuple[int, str, bytes]:
        """Status, content type and bytes for a GET: a page of the corpus, or 404."""
        document = self.document_at(path)
        if document is None:
            return 404, "text/plain; charset=utf-8", b"not found"
        return 200, "text/html; charset=utf-8", page_html(document).encode()

    def results(self, request: JSONObject) -> list[JSONObject]:
        """The corpus ranked by the share of query terms each document has, best first."""
        wanted = _terms(request["query"])
        include = [_bare(d) for d in request.get("include_domains", [])]
        exclude = [_bare(d) for d in request.get("exclude_domains", [])]
        ranked: list[tuple[float, int, Document]] = []
        for index, document in enumerate(self.corpus):
            if include and not any(_on(document.host, d) for d in include):
                continue
            if any(_on(document.host, d) for d in exclude):
                continue
            score = len(wanted & document.terms()) / len(wanted) if wanted else 0.0
            if score > 0:
                ranked.append((score, index, document))
        ranked.sort(key=lambda r: (-r[0], r[1]))
        raw = request.get("include_raw_content") not in (None, False)
        return [
            self._result(document, score, request, raw)
            for score, _, document in ranked[: request.get("max_results", 5)]
        ]

    def _result(
        self, document: Document, score: float, request: JSONObject, raw: bool
    ) -> JSONObject:
        result: JSONObject = {
            "url": self.url_of(document),
            "title": document.title,
            "content": document.content,
            "score": round(score, 4),
            "raw_content": document.body if raw else None,
        }
        # As Tavily: a publication date only in news results.
        if request.get("topic") == "news" and document.published_date:
            result["published_date"] = document.published_date
        return result


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


def _terms(text: str) -> set[str]:
    return {t for t in re.findall(r"[a-z0-9]+", text.lower()) if t not in _STOPWORDS}


def _bare(domain: str) -> str:
    domain = domain.strip().lower()
    return domain.removeprefix("www.")


def _on(host: str, domain: str) -> bool:
    host = _bare(host)
    return host == domain or host.endswith("." + domain)


def page_html(document: Document) -> str:
    """A document as a small HTML page: its title, then a paragraph per paragraph."""
    title = html.escape(document.title)
    paragraphs = "".join(
        f"<p>{html.escape(' '.join(p.split()))}</p>"
        for p in document.body.split("\n\n")
        if p.strip()
    )
    return (
        f"<!doctype html><html><head><title>{title}</title></head>"
        f"<body><h1>{title}</h1>{paragraphs}</body></html>"
    )


class LocalWebServer(ThreadingHTTPServer):
    """An HTTP server on a free loopback port answering with a `LocalWeb`."""

    daemon_threads = True

    def __init__(self, web: LocalWeb) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.web = web

    def handle_error(
        self, request: socket.socket | tuple[bytes, socket.socket], client_address: Any
    ) -> None:
        # A client that gave up waiting (a timeout) has hung up by the time we answer.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the real API
    timeout = 10  # an idle keep-alive connection must not hold a thread forever

    def log_message(self, format: str, *args: object) -> None:
        pass  # quiet: the demo prints what the session recorded

    @property
    def web(self) -> LocalWeb:
        return cast(LocalWebServer, self.server).web

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        status, payload = self.web.answer_post(self._path(), self._headers(), body)
        self._send(status, "application/json", json.dumps(payload).encode())

    def do_GET(self) -> None:
        self._send(*self.web.answer_get(self._path(), self._headers()))

    def _path(self) -> str:
        return urlsplit(self.path).path

    def _headers(self) -> dict[str, str]:
        return {k.lower(): v for k, v in self.headers.items()}

    def _send(self, status: int, content_type: str, payload: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


W = TypeVar("W", bound=LocalWeb)


@contextmanager
def serving(web: W, *, link_pages: bool = True) -> Iterator[W]:
    """Serve `web` on a free loopback port for the duration of the block; with
    `link_pages`, its results point at its own pages."""
    server = LocalWebServer(web)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    web.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    if link_pages:
        web.pages_base_url = f"{web.base_url}/pages"
    try:
        yield web
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def serve_local_web(
    *, api_key: str = DEMO_KEY, corpus_path: Path = CORPUS
) -> AbstractContextManager[LocalWeb]:
    """The demo's research web (the shipped corpus, pages linked), running."""
    return serving(LocalWeb(api_key, load_corpus(corpus_path)))
