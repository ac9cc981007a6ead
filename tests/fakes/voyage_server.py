"""A local Voyage AI embeddings API: real HTTP on a loopback port, Voyage's wire format.

The real `voyageai` client talks to it through `Client(base_url=fake.base_url)`. It
answers POST /v1/embeddings as Voyage does: `{"object": "list", "data": [{"object":
"embedding", "embedding": [...], "index": i}], "model", "usage": {"total_tokens"}}`,
with each embedding a list of floats, or base64 of little-endian float32s when the body
asks for `encoding_format: "base64"` (the client always does). Refusals are Voyage's
`{"detail": "..."}` with its status: 401 for a bad key, 400 for a body it would refuse,
and whatever a test plans with `fail_next` (429, 500, 503, ...). Every request is kept.

Vectors are deterministic: a seeded hash of (model, input_type, text) drawn into a unit
vector of the asked size, so a test can compute what a text should come back as
(`fake.vector(...)`), and a query and a document of the same text differ as on Voyage.

    with serve_fake_voyage() as fake:
        fake.fail_next(429)
        embedder = VoyageEmbedder(fake.api_key, base_url=fake.base_url, retry_wait=0.0)
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import random
import struct
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast
from urllib.parse import urlsplit

import pytest

JSONObject = dict[str, Any]  # the body as the client sent it: not validated into a shape

MODELS = {  # name -> (default output size, tokens one request may hold)
    "voyage-3.5": (1024, 320_000),
    "voyage-3.5-lite": (1024, 1_000_000),
    "voyage-3-large": (1024, 120_000),
    "voyage-code-3": (1024, 120_000),
    "voyage-4": (1024, 320_000),
    "voyage-4-lite": (1024, 1_000_000),
    "voyage-4-large": (1024, 120_000),
}
OUTPUT_DIMENSIONS = (256, 512, 1024, 2048)
MAX_TEXTS = 1000

# Voyage's words for its refusals.
DETAILS = {
    400: "Invalid request.",
    401: "Provided API key is invalid.",
    429: "You have exceeded your rate limit. Please slow down and try again later.",
    500: "Internal server error.",
    502: "Bad gateway.",
    503: "The service is temporarily unavailable. Please try again later.",
}


@dataclass(frozen=True)
class RecordedRequest:
    path: str
    headers: dict[str, str]  # names lower-cased
    body: JSONObject
    status: int


@dataclass(frozen=True)
class _Failure:
    status: int
    detail: str
    retry_after: float | None


@dataclass
class FakeVoyage:
    """What the server will refuse and what it saw; safe from any thread."""

    api_key: str
    base_url: str = ""  # http://127.0.0.1:<port>/v1, set once serving
    scale: float = 1.0  # 1: unit vectors as Voyage sends; else vectors of this length
    _requests: list[RecordedRequest] = field(default_factory=list)
    _failures: deque[_Failure] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def fail_next(
        self,
        status: int,
        *,
        times: int = 1,
        detail: str | None = None,
        retry_after: float | None = None,
    ) -> None:
        """The next `times` embedding requests with a good key answer `status`."""
        failure = _Failure(status, detail or DETAILS.get(status, "Error."), retry_after)
        with self._lock:
            self._failures.extend([failure] * times)

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def bodies(self) -> list[JSONObject]:
        """The bodies of the embedding requests that got embeddings back."""
        return [r.body for r in self.requests if r.status == 200]

    @staticmethod
    def vector(text: str, *, model: str, input_type: str | None, dimension: int) -> list[float]:
        """The unit vector the fake answers for `text` (before any `scale`)."""
        seed = hashlib.sha256(f"{model}\0{input_type}\0{text}".encode()).digest()
        draw = random.Random(seed)
        raw = [draw.gauss(0.0, 1.0) for _ in range(dimension)]
        norm = math.sqrt(sum(x * x for x in raw))
        return [x / norm for x in raw]

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _next_failure(self) -> _Failure | None:
        with self._lock:
            return self._failures.popleft() if self._failures else None

    def _answer(self, path: str, headers: dict[str, str], body: object) -> _Reply:
        if path != "/v1/embeddings":
            return _Reply(404, {"detail": "Not Found"})
        if headers.get("authorization") != f"Bearer {self.api_key}":
            return _Reply(401, {"detail": DETAILS[401]})
        failure = self._next_failure()
        if failure is not None:
            extra = (
                ()
                if failure.retry_after is None
                else (("retry-after", f"{failure.retry_after:g}"),)
            )
            return _Reply(failure.status, {"detail": failure.detail}, extra)
        problem = _problem(body)
        if problem is not None:
            return _Reply(400, {"detail": problem})
        return _Reply(200, self._embeddings(cast(JSONObject, body)))

    def _embeddings(self, body: JSONObject) -> JSONObject:
        texts = [body["input"]] if isinstance(body["input"], str) else body["input"]
        model = body["model"]
        dimension = body.get("output_dimension") or MODELS[model][0]
        data = []
        for index, text in enumerate(texts):
            unit = self.vector(
                text, model=model, input_type=body.get("input_type"), dimension=dimension
            )
            vector = [x * self.scale for x in unit]
            embedding: object = vector
            if body.get("encoding_format") == "base64":
                embedding = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            data.append({"object": "embedding", "embedding": embedding, "index": index})
        tokens = sum(_tokens(t) for t in texts)
        return {"object": "list", "data": data, "model": model, "usage": {"total_tokens": tokens}}


@dataclass(frozen=True)
class _Reply:
    status: int
    body: JSONObject
    headers: tuple[tuple[str, str], ...] = ()


def _tokens(text: str) -> int:
    """A stand-in for Voyage's tokenizer: a token per word or CJK character, at least 1."""
    return max(1, len(text.split()) + sum(1 for c in text if "\u3040" <= c <= "\u9fff"))


def _problem(body: object) -> str | None:
    """The 400 detail Voyage would give for this body, for the checks mirrored here."""
    if not isinstance(body, dict):
        return "Request body must be a JSON object."
    texts = body.get("input")
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        return "input: must be a string or a non-empty list of strings."
    if len(texts) > MAX_TEXTS:
        return f"The batch size limit is {MAX_TEXTS}. Your batch size is {len(texts)}."
    model = body.get("model")
    if model not in MODELS:
        return f"Model {model} is not supported. Supported models are {', '.join(MODELS)}."
    if body.get("input_type") not in (None, "query", "document"):
        return "input_type: must be one of None, 'query', 'document'."
    if body.get("output_dimension") not in (None, *OUTPUT_DIMENSIONS):
        sizes = ", ".join(map(str, OUTPUT_DIMENSIONS))
        return f"output_dimension: {model} supports {sizes}; got {body['output_dimension']}."
    if body.get("output_dtype") not in (None, "float"):
        return "this fake answers only output_dtype float"
    if body.get("encoding_format") not in (None, "base64"):
        return "encoding_format: must be None or 'base64'."
    tokens, limit = sum(_tokens(t) for t in texts), MODELS[model][1]
    if tokens > limit:
        return (
            f"Request to model '{model}' failed. The max allowed tokens per submitted batch is "
            f"{limit}. Your batch has {tokens} tokens after truncation. Please lower the number "
            "of tokens in the batch."
        )
    return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, fake: FakeVoyage) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.fake = fake


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the real API: the client reuses sessions
    timeout = 10  # an idle keep-alive connection must not hold a thread forever

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
        reply = fake._answer(path, headers, body)
        kept = body if isinstance(body, dict) else {}
        fake._record(RecordedRequest(path, headers, kept, reply.status))
        payload = json.dumps(reply.body).encode()
        self.send_response(reply.status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(payload)))
        for name, value in reply.headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)


@contextmanager
def serve_fake_voyage(*, api_key: str = "pa-test-key", scale: float = 1.0) -> Iterator[FakeVoyage]:
    """Run the fake on a free loopback port for the duration of the block."""
    fake = FakeVoyage(api_key, scale=scale)
    server = _Server(fake)
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    fake.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def fake_voyage() -> Iterator[FakeVoyage]:
    """The fake, running; import this into a conftest to share it."""
    with serve_fake_voyage() as fake:
        yield fake
