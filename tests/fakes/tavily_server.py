"""A local Tavily Search API for tests: the demo's local web, with faults and a record.

The wire format, the ranking by term overlap and the pages are those of
`adapters/web_search/local_web.py`; this adds what tests need: the corpus of
`tests/fixtures/search_corpus.json` by default, the next requests failing with a status
(429, 432, ...), every answer waiting, and every request kept with when it started and
finished (to tell whether searches overlapped).

    with serve_fake_tavily() as fake:
        fake.fail_next(429)
        search = TavilySearch(fake.api_key, base_url=fake.base_url)

With `link_pages=True` result URLs point back at the fake (`/pages/<host><path>`), which
serves each document as a small HTML page, so a test can read what it found.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from adapters.web_search.local_web import (
    UNAUTHORIZED,
    Document,
    JSONObject,
    LocalWeb,
    serving,
)
from adapters.web_search.local_web import load_corpus as _load_corpus

CORPUS = Path(__file__).parent.parent / "fixtures" / "search_corpus.json"

# Tavily's own words for its refusals (its error body is {"detail": {"error": ...}}).
DETAILS = {
    400: "Invalid request.",
    401: UNAUTHORIZED,
    403: "Forbidden.",
    429: "Your request has been blocked due to excessive requests. Please reduce rate of requests.",
    432: "This request exceeds your plan's set usage limit. "
    "Please upgrade your plan or contact support@tavily.com",
    433: "This request exceeds the pay-as-you-go limit. "
    "You can increase your limit on the Tavily dashboard or contact support@tavily.com",
    500: "Internal server error.",
}


def load_corpus(path: Path = CORPUS) -> tuple[Document, ...]:
    return _load_corpus(path)


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
class FakeTavily(LocalWeb):
    """The server's corpus, its planned failures and what it saw; safe from any thread."""

    delay: float = 0.0  # seconds each /search waits before answering
    _requests: list[RecordedRequest] = field(default_factory=list)
    _failures: deque[_Failure] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def server_env(self) -> dict[str, str]:
        """What a `tokendance serve` needs to search and read pages here."""
        return {
            "TAVILY_API_KEY": self.api_key,
            "TOKENDANCE_TAVILY_URL": self.base_url,
            "TOKENDANCE_FETCH_ALLOW": "127.0.0.1",
        }

    def fail_next(self, status: int, *, times: int = 1, detail: str | None = None) -> None:
        """The next `times` searches (with a good key) answer `status` and Tavily's words."""
        failure = _Failure(status, DETAILS.get(status, "error") if detail is None else detail)
        with self._lock:
            self._failures.extend([failure] * times)

    @property
    def searches(self) -> list[RecordedRequest]:
        with self._lock:
            return [r for r in self._requests if r.path == "/search"]

    def answer_post(
        self, path: str, headers: dict[str, str], body: object
    ) -> tuple[int, JSONObject]:
        started = time.monotonic()
        if path == "/search" and self.delay:
            time.sleep(self.delay)
        failure = self._next_failure() if path == "/search" and self.authorized(headers) else None
        if failure is not None:
            status, payload = failure.status, {"detail": {"error": failure.detail}}
        else:
            status, payload = super().answer_post(path, headers, body)
        kept = body if isinstance(body, dict) else {}
        finished = time.monotonic()
        self._record(RecordedRequest("POST", path, headers, kept, status, started, finished))
        return status, payload

    def answer_get(self, path: str, headers: dict[str, str]) -> tuple[int, str, bytes]:
        started = time.monotonic()
        status, content_type, payload = super().answer_get(path, headers)
        self._record(RecordedRequest("GET", path, headers, {}, status, started, time.monotonic()))
        return status, content_type, payload

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _next_failure(self) -> _Failure | None:
        with self._lock:
            return self._failures.popleft() if self._failures else None


def overlapping(requests: list[RecordedRequest]) -> bool:
    """True when all the requests were being answered at one same moment."""
    return max(r.started for r in requests) < min(r.finished for r in requests)


@contextmanager
def serve_fake_tavily(
    *, api_key: str = "tvly-test-key", link_pages: bool = False, corpus_path: Path = CORPUS
) -> Iterator[FakeTavily]:
    """Run the fake on a free loopback port for the duration of the block."""
    with serving(FakeTavily(api_key, load_corpus(corpus_path)), link_pages=link_pages) as fake:
        yield fake


@pytest.fixture
def fake_tavily() -> Iterator[FakeTavily]:
    """The fake, running; import this into a conftest to share it."""
    with serve_fake_tavily() as fake:
        yield fake
