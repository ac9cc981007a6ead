"""Ports: what the application needs from the outside world, in our own types.

Adapters conform to these without inheriting from them; `adapters/bootstrap/`
picks which adapter fills each port.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Protocol
from uuid import UUID

from eventsourcing.persistence import Notification

from domain.budgets import BudgetStatus, Spend, ThresholdCrossing
from domain.conversation import LiveItem, ModelRequest, StreamItem
from domain.decks import Deck
from domain.values import BudgetScope
from schemas.sandbox import (
    SandboxLimit,
    SandboxLimits,
    SandboxResult,
    SandboxRun,
    SandboxUnavailable,
)

__all__ = ["SandboxLimit", "SandboxLimits", "SandboxResult", "SandboxRun", "SandboxUnavailable"]


class LLMError(Exception):
    """A model call failed; `retryable` says whether trying again could help."""

    code = "LLM_ERROR"

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__(message)
        self.retryable = retryable


class LLMNotConfigured(LLMError):
    """No model is configured (no API key and no scripted model)."""

    code = "LLM_NOT_CONFIGURED"


class LLMRateLimited(LLMError):
    """The vendor answered 429 and kept answering it after all retries."""

    code = "LLM_RATE_LIMITED"


class LLMOverloaded(LLMError):
    """The vendor answered 529 (or 5xx) and kept answering it after all retries."""

    code = "LLM_OVERLOADED"


class LLMConnectionError(LLMError):
    """The connection failed or the stream was cut off, after all retries."""

    code = "LLM_CONNECTION_ERROR"


class LLMBadRequest(LLMError):
    """The vendor refused the request itself (4xx other than 429): retrying won't help."""

    code = "LLM_BAD_REQUEST"


class LLMContextTooLong(LLMBadRequest):
    """The request is longer than the model's context window: trim or compact first."""

    code = "LLM_CONTEXT_TOO_LONG"


class LLMRefused(LLMBadRequest):
    """The vendor refused the request's content itself (a safety block on the prompt).

    A model that declines within its turn is not an error: that turn ends with the stop
    reason `refusal`."""

    code = "LLM_REFUSED"


# What a fallback model may take over: the vendor could not serve the call for now.
FALLBACK_ERRORS: tuple[type[LLMError], ...] = (LLMRateLimited, LLMOverloaded, LLMConnectionError)


class LLM(Protocol):
    """A language model: stream one assistant turn for a request.

    Yields live `TextDelta` / `ThinkingDelta` items, then exactly one `ModelTurn`
    (the finished turn with its usage) as the last item. Raises `LLMError`.
    """

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]: ...


class TokenCounter(Protocol):
    """Estimates tokens before a call (exact usage comes back with the turn)."""

    def count(self, text: str) -> int: ...


class BlobNotFound(Exception):
    """No blob is stored under that hash."""


class BlobStore(Protocol):
    """Content-addressed storage: the key of a blob is the sha256 of its bytes."""

    async def put(self, data: bytes, *, content_type: str = "application/octet-stream") -> str: ...

    async def get(self, sha256: str) -> bytes: ...

    async def exists(self, sha256: str) -> bool: ...

    async def delete(self, sha256: str) -> None:
        """Remove the blob (nothing if there is none): an erasure's."""
        ...


class ToolExecutionError(Exception):
    """A tool ran and failed; the message is what the model sees (after its `code`, if
    the failure has one: `URL_NOT_ALLOWED: ...`).

    (What a tool is lives in `application/tools/base.py`: tools are application code
    that use these ports, not ports themselves.)
    """

    code: str | None = None


class FeedBatch(Protocol):
    """Stored events delivered together, in order; ack only after they are applied."""

    @property
    def notifications(self) -> Sequence[Notification]: ...

    async def ack(self) -> None: ...


class FeedError(Exception):
    """The feed delivered something that is not a stored event; `position` says where."""

    def __init__(self, position: str, message: str) -> None:
        super().__init__(f"{position}: {message}")
        self.position = position
        self.message = message


class EventFeed(Protocol):
    """Committed events, in commit order, at least once (a consumer skips repeats)."""

    def batches(self, after: int) -> AsyncIterator[FeedBatch]:
        """Batches of events after notification id `after`, each applied before the next."""
        ...


class DeltaSink(Protocol):
    """Where live items go (to SSE clients): a streaming turn's deltas, a running tool's
    start and progress; never stored."""

    async def publish(self, session_id: UUID, delta: LiveItem) -> None: ...


class RunLocks(Protocol):
    """Which live process drives a session's run: one at a time, across processes."""

    async def try_lock(self, session_id: UUID) -> bool:
        """Take the session's run lock unless a live process holds it."""
        ...

    async def unlock(self, session_id: UUID) -> None: ...

    async def close(self) -> None:
        """Let go of every lock this process holds."""
        ...


class RunDispatch(Protocol):
    """Hands runs to worker processes (a work queue) instead of this process's tasks."""

    async def dispatch(self, session_id: UUID, run_id: UUID, at_version: int) -> None:
        """Ask some worker to drive the run (the session is at `at_version`)."""
        ...

    async def stop(self, session_id: UUID, worker: str) -> bool:
        """Ask `worker` to stop driving the session's run; whether it did."""
        ...


class RunTracing(Protocol):
    """A span around each run (`invoke_agent`): the run's model and tool spans nest in it."""

    def invoke(self, session_id: UUID, run_id: UUID) -> AbstractContextManager[object]: ...


class SpendReader(Protocol):
    """Budgets and what has been spent against them, as the usage read model has it
    (asked before and after every model call: on the loop where the store allows)."""

    async def budgets_covering(
        self, scopes: Sequence[tuple[BudgetScope, UUID]], period: str
    ) -> tuple[int, list[BudgetStatus]]:
        """The read model's position, and the budgets set on `scopes` with their spend
        in `period` (YYYY-MM) up to that position."""
        ...


class ThresholdRecorder(Protocol):
    """Where a crossed threshold is recorded, once per budget, month and threshold."""

    def record_crossings(
        self, scope: BudgetScope, scope_id: UUID, period: str, spent: Spend, session_id: UUID
    ) -> list[ThresholdCrossing]:
        """The crossings recorded now (none if another call recorded them first)."""
        ...


# -- research: web search, page reading, embeddings ------------------------------------


@dataclass(frozen=True)
class SearchQuery:
    """What `web_search` asks for (checked by the tool before it reaches a port)."""

    query: str
    num_results: int = 5
    topic: str = "general"  # general | news | finance
    time_range: str | None = None  # day | week | month | year
    include_domains: tuple[str, ...] = ()
    exclude_domains: tuple[str, ...] = ()


@dataclass(frozen=True)
class SearchHit:
    """One search result: where it is, what it is called, the text the search returned."""

    url: str
    title: str
    content: str
    score: float = 0.0
    published_date: str | None = None


class WebSearchError(ToolExecutionError):
    """The search failed; the message says what the model can do about it."""


class WebSearch(Protocol):
    """A web search engine (Tavily in production, a local fake in tests)."""

    async def search(self, query: SearchQuery) -> list[SearchHit]: ...


@dataclass(frozen=True)
class Page:
    """A fetched page as clean Markdown (HTML, plain text and PDF alike)."""

    url: str  # after redirects
    title: str
    markdown: str
    media_type: str  # what the server said it was
    fetched_bytes: int


class PageRefused(ToolExecutionError):
    """A URL the reader will not fetch (a private or local address, a bad scheme).

    `code` is what a kept failure records: `URL_NOT_ALLOWED`.
    """

    code = "URL_NOT_ALLOWED"


class PageError(ToolExecutionError):
    """A page that could not be read: too large, too slow, not parseable, an HTTP error."""


class PageReader(Protocol):
    """Fetches a URL within limits and turns it into Markdown."""

    async def read(self, url: str) -> Page: ...


class Embedder(Protocol):
    """Text to vectors of one fixed dimension, comparable by cosine similarity."""

    @property
    def model(self) -> str:
        """Names the model and its dimension (`wordllama-l2_supercat-256`): vectors of two
        models are never compared, so stored vectors carry it."""
        ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors of texts to be stored and found (documents)."""
        ...

    def embed_query(self, text: str) -> list[float]:
        """The vector of a search for documents: a model trained for retrieval places it
        near the documents that answer it (a symmetric one embeds it as a document)."""
        ...


# -- sandboxed code execution ----------------------------------------------------------


class Sandbox(Protocol):
    """Runs untrusted code isolated from the host, the network and other runs."""

    name: str  # "bubblewrap" | "docker"

    async def run(self, run: SandboxRun) -> SandboxResult: ...


class SlideRenderer(Protocol):
    """Renders a deck version to the bytes of a PPTX file, from the data alone (pure and
    CPU-bound: called in a worker thread)."""

    def render(self, deck: Deck, images: Mapping[str, bytes]) -> bytes:
        """`images`: the bytes of each slide's image, by its ref."""
        ...


# -- long-term memory ------------------------------------------------------------------


@dataclass(frozen=True)
class MemoryHit:
    """A memory a search found, with its fused score (higher is better)."""

    memory_id: UUID
    namespace: str  # "user:<id>" | "workspace:<id>" | "team:<id>"
    category: str
    text: str
    score: float  # reciprocal rank fusion of the vector and full-text ranks
    similarity: float | None  # cosine similarity to the query, if the vector search found it
    source_session_id: UUID | None
    source_version: int | None
    source_document: str | None


class MemoryIndex(Protocol):
    """The searchable read model of memories (blocking: called through the bridge)."""

    def search(
        self,
        query: str,
        namespaces: Sequence[str],
        *,
        k: int,
        categories: Sequence[str] | None = None,
    ) -> list[MemoryHit]:
        """The best `k` unexpired memories of these namespaces for `query`: vector
        similarity and full-text rank fused by reciprocal rank fusion."""
        ...

    def nearest(self, namespace: str, text: str) -> tuple[UUID, float] | None:
        """The unexpired memory of `namespace` closest in meaning to `text`, with its
        cosine similarity (to catch near duplicates), or None if it holds none."""
        ...

    def wait_for(self, notification_id: int, timeout: float) -> bool:
        """Until the index has applied the event at `notification_id`; False on timeout."""
        ...


class PersonalKeys(Protocol):
    """A key per user for the personal content of events (`domain.personal_data`)."""

    def seal(self, user_id: UUID, text: str) -> str:
        """`text` sealed with the user's key (made on first use); `UserGone` once the
        user is erased."""
        ...

    def is_sealed(self, value: str) -> bool: ...

    def held(self, user_id: UUID) -> bool:
        """Whether the user's key (or that it was destroyed) is in memory, fresh: sealing
        for the user then reads nothing from the database."""
        ...

    def open(self, sealed: str, where: str) -> str:
        """The text again; `ERASED` once its key is destroyed, `UNREADABLE` (logged with
        `where`) if the key there cannot open it."""
        ...
