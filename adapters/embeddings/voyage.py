"""An `Embedder` on Voyage AI's hosted models, through the official `voyageai` client.

Voyage embeds a query and the documents it should find differently (`input_type`), so
stored texts go through `embed` and searches through `embed_query`. Its flexible models
give any of a few output sizes; the one chosen is part of `model` (`voyage-3.5-1024`),
because vectors of two sizes are never compared. A request takes at most 1000 texts and
a model-dependent number of tokens, so texts go in batches that keep well under both.

The client's own retries wait at least a second each and cannot be shortened, so it makes
one attempt and this module retries rate limits, overloads and dropped connections itself,
with a backoff a test can set to nearly nothing. Every failure is one `EmbedderUnavailable`
whose message says what went wrong in words an operator can act on, without the key.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit

from adapters.embeddings.word_llama import EmbedderUnavailable
from adapters.loopback import is_loopback_host

if TYPE_CHECKING:
    from voyageai.client import Client
    from voyageai.error import VoyageError

DEFAULT_MODEL = "voyage-3.5"
DEFAULT_BASE_URL = "https://api.voyageai.com/v1"

# Voyage's models with a flexible output size (Matryoshka): each one's default size. The
# sizes all of them accept are OUTPUT_DIMENSIONS; other models are used as asked.
DEFAULT_DIMENSIONS = {
    "voyage-3.5": 1024,
    "voyage-3.5-lite": 1024,
    "voyage-3-large": 1024,
    "voyage-code-3": 1024,
    "voyage-4": 1024,
    "voyage-4-lite": 1024,
    "voyage-4-large": 1024,
}
OUTPUT_DIMENSIONS = (256, 512, 1024, 2048)

# The most texts in one request: Voyage allows 1000, and recommends batches of 128.
MAX_BATCH = 128
# Tokens one request may hold, per model (Voyage's documented limits); others: the least.
TOKEN_LIMITS = {
    "voyage-3.5": 320_000,
    "voyage-3.5-lite": 1_000_000,
    "voyage-4": 320_000,
    "voyage-4-lite": 1_000_000,
}
DEFAULT_TOKEN_LIMIT = 120_000
# A text counts at most its model's context (32K tokens): the rest is truncated.
CONTEXT_TOKENS = 32_000

# The switch against real embedding calls (like `ALLOW_MODEL_REQUESTS`): a test suite sets
# it to False, and then only a server on this machine (a fake) is called.
ALLOW_EMBED_REQUESTS = True

InputType = Literal["document", "query"]


class EmbedRequestsForbidden(RuntimeError):
    """A real embedding request was attempted while `ALLOW_EMBED_REQUESTS` is False.

    Not an `EmbedderUnavailable`: it is a bug in a test, not a failure to fall back from.
    """


class VoyageEmbedder:
    """Embeds with one Voyage model at one output size; unit vectors, one per text, in order.

    Synchronous, like the other embedders: callers already run `embed` off the event loop.
    """

    def __init__(
        self,
        api_key: str,
        *,
        model: str = DEFAULT_MODEL,
        dimension: int | None = None,
        base_url: str | None = None,
        retries: int = 3,
        retry_wait: float = 1.0,
        max_wait: float = 30.0,
        timeout: float = 30.0,
        batch_size: int = MAX_BATCH,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not api_key.strip():
            raise EmbedderUnavailable("Voyage AI needs an API key: set VOYAGE_API_KEY")
        self._dimension = _dimension(model, dimension)
        if not 1 <= batch_size <= 1000:
            raise ValueError("batch_size must be from 1 to 1000 (Voyage's limit per request)")
        self._name = model
        self._key = api_key
        self._base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self._retries = max(0, retries)
        self._retry_wait = retry_wait
        self._max_wait = max_wait
        self._batch_size = batch_size
        self._sleep = sleep
        self._token_limit = TOKEN_LIMITS.get(model, DEFAULT_TOKEN_LIMIT)
        self._client = _client(api_key, self._base_url, timeout)

    @property
    def model(self) -> str:
        return f"{self._name}-{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def base_url(self) -> str:
        """Where requests go (`https://api.voyageai.com/v1` unless overridden)."""
        return self._base_url

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Vectors of texts to be stored and found (Voyage's `document` input type)."""
        return self._embed(texts, "document")

    def embed_query(self, text: str) -> list[float]:
        """The vector of a search: closest to the documents that answer it."""
        [vector] = self._embed([text], "query")
        return vector

    def _embed(self, texts: Sequence[str], input_type: InputType) -> list[list[float]]:
        vectors: list[list[float]] = []
        for batch in batches(texts, self._batch_size, self._token_limit):
            vectors.extend(self._request(batch, input_type))
        return vectors

    def _request(self, batch: list[str], input_type: InputType) -> list[list[float]]:
        check_embed_request_allowed(self._base_url)
        from voyageai import error

        retryable = (
            error.RateLimitError,
            error.ServiceUnavailableError,
            error.ServerError,
            error.Timeout,
            error.APIConnectionError,
        )
        for attempt in range(self._retries + 1):
            try:
                answer = self._client.embed(
                    batch,
                    model=self._name,
                    input_type=input_type,
                    truncation=True,
                    output_dimension=self._dimension,
                )
            except error.AuthenticationError as e:
                raise self._unavailable(
                    f"Voyage AI refused the API key (VOYAGE_API_KEY): {_said(e)}"
                ) from None
            except retryable as e:
                if attempt < self._retries:
                    self._sleep(self._wait(attempt, e))
                    continue
                raise self._unavailable(self._gave_up(e)) from None
            except error.VoyageError as e:
                status = f"HTTP {e.http_status}" if e.http_status else type(e).__name__
                raise self._unavailable(
                    f"Voyage AI rejected the request ({status}): {_said(e)}"
                ) from None
            except (AttributeError, KeyError, TypeError, ValueError) as e:
                raise self._unavailable(
                    f"Voyage AI at {self._base_url} answered something that is not "
                    f"embeddings ({type(e).__name__}: {e})"
                ) from None
            return self._vectors(answer.embeddings, len(batch))
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _vectors(self, rows: Sequence[Sequence[float]], expected: int) -> list[list[float]]:
        if len(rows) != expected:
            raise self._unavailable(
                f"Voyage AI answered {len(rows)} embeddings for {expected} texts"
            )
        vectors = [_unit(row) for row in rows]
        for vector in vectors:
            if len(vector) != self._dimension:
                raise self._unavailable(
                    f"Voyage AI answered vectors of {len(vector)} dimensions, not "
                    f"{self._dimension} ({self._name})"
                )
        return vectors

    def _wait(self, attempt: int, failure: VoyageError) -> float:
        """Exponential backoff, or longer when the answer says when to come back."""
        wait = self._retry_wait * 2.0**attempt
        with contextlib.suppress(TypeError, ValueError):
            wait = max(wait, float(failure.headers.get("retry-after", 0)))
        return min(wait, self._max_wait)

    def _gave_up(self, failure: VoyageError) -> str:
        from voyageai import error

        tries = f"{self._retries + 1} attempts"
        match failure:
            case error.RateLimitError():
                return f"Voyage AI rate limited every one of {tries}: {_said(failure)}"
            case error.Timeout():
                return f"Voyage AI at {self._base_url} did not answer in time ({tries})"
            case error.APIConnectionError():
                return f"Voyage AI at {self._base_url} is unreachable ({tries}): {failure}"
            case _:
                return (
                    f"Voyage AI failed (HTTP {failure.http_status}) on every one of {tries}: "
                    f"{_said(failure)}"
                )

    def _unavailable(self, message: str) -> EmbedderUnavailable:
        """The failure, with the key blotted out should any message ever repeat it."""
        return EmbedderUnavailable(message.replace(self._key, "<VOYAGE_API_KEY>"))


def check_embed_request_allowed(base_url: str) -> None:
    """Refuse a request to anything but a loopback server while requests are switched off."""
    if ALLOW_EMBED_REQUESTS or is_loopback_host(urlsplit(base_url).hostname or ""):
        return
    raise EmbedRequestsForbidden(
        f"real embedding requests are switched off (ALLOW_EMBED_REQUESTS is False); "
        f"refused a request to {base_url}"
    )


def batches(texts: Sequence[str], max_texts: int, token_limit: int) -> Iterator[list[str]]:
    """The texts in order, in runs of at most `max_texts` whose estimated tokens fit.

    The estimate (UTF-8 bytes / 2) counts more tokens than Voyage's tokenizer does for
    English, code and CJK alike, so a batch is never refused for its size; counting
    exactly would need the tokenizer, which the client downloads.
    """
    batch: list[str] = []
    tokens = 0
    for text in texts:
        cost = min(len(text.encode()) // 2 + 1, CONTEXT_TOKENS)
        if batch and (len(batch) >= max_texts or tokens + cost > token_limit):
            yield batch
            batch, tokens = [], 0
        batch.append(text)
        tokens += cost
    if batch:
        yield batch


def _dimension(model: str, dimension: int | None) -> int:
    if dimension is None:
        if model not in DEFAULT_DIMENSIONS:
            raise ValueError(
                f"no default dimension is known for the Voyage model {model!r}: give one "
                f"(known models: {', '.join(DEFAULT_DIMENSIONS)})"
            )
        return DEFAULT_DIMENSIONS[model]
    if dimension <= 0:
        raise ValueError("dimension must be positive")
    if model in DEFAULT_DIMENSIONS and dimension not in OUTPUT_DIMENSIONS:
        sizes = ", ".join(map(str, OUTPUT_DIMENSIONS))
        raise ValueError(f"{model} gives vectors of {sizes} dimensions, not {dimension}")
    return dimension


def _client(api_key: str, base_url: str, timeout: float) -> Client:
    # Imported here: the package takes over a second to import, which a process that
    # embeds locally should not pay.
    try:
        from voyageai.client import Client
    except ImportError as e:
        raise EmbedderUnavailable(
            f"the voyageai package is not installed ({e}): "
            "install tokendance[voyage] for Voyage embeddings"
        ) from None
    # max_retries=0: one attempt per call (see the module's docstring).
    return Client(api_key=api_key, max_retries=0, timeout=timeout, base_url=base_url)


def _said(failure: VoyageError) -> str:
    """Voyage's own words (its `detail`), or the class of failure when it gave none."""
    return str(failure.user_message or type(failure).__name__)


def _unit(row: Sequence[float]) -> list[float]:
    vector = [float(x) for x in row]
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else vector
