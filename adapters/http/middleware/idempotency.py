"""`Idempotency-Key` on commands: a retried POST gets the first answer, and nothing twice.

The first request with a key claims it (a row in Postgres, so every API process sees
it), runs, and stores its status and body before the client sees them; a retry with
the same key, method, path and body gets that stored answer (`Idempotent-Replayed:
true`). Another request under the key while the first runs: 409
`IDEMPOTENCY_IN_PROGRESS`; the key with a different request: 422
`IDEMPOTENCY_KEY_REUSED`. A 5xx (or a request that never answered) gives the key back
(its row stays, marked released, so the retry knows it is one): the client can retry.
A claim belongs to a live process (`lease_owner.py`): one whose process died is taken
over at once, so a retry after a crash and restart runs (or gets the recorded answer),
never 409. Keys are the user's own and expire after 24 hours.

A chat message answers with a stream, which cannot be stored: its key is stored as
"streamed" when the stream starts, and the retry goes on to the handler, which finds
the message by its key in the session's log and streams the run it started. A key
claimed for the first time (`NEW`) has nothing under it in any log: the handler need
not look (a retry after a 5xx, a crash or the key's expiry does look).
Not covered: the auth routes (their bodies are tokens) and uploads (content-addressed,
so idempotent already; a multipart body differs on every try by its boundary).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import cast

from litestar import Request
from litestar.datastructures import State
from litestar.enums import ScopeType
from litestar.middleware import ASGIMiddleware
from litestar.types import ASGIApp, HTTPScope, Message, Receive, Scope, Send

from adapters.http.errors import ApiError, invalid
from adapters.http.middleware.idempotency_keys import NEW, IdempotencyStore, Stored
from adapters.http.middleware.limits import caller_key
from application.bridge import SyncBridge

HEADER = "idempotency-key"
VALID_KEY = re.compile(r"[\x20-\x7e]{1,255}")  # printable ASCII
COVERED = re.compile(r"^/api/v1/(?!auth/)(?!sessions/[^/]+/attachments$)")
STREAM = b"text/event-stream"
_NEW_KEY = "tokendance.idempotency_key_new"  # in the request's scope state


def request_hash(scope: HTTPScope, body: bytes) -> str:
    digest = hashlib.sha256()
    for part in (scope["method"].encode(), scope["path"].encode(), scope["query_string"], body):
        digest.update(len(part).to_bytes(8, "big") + part)
    return digest.hexdigest()


@dataclass
class _Answer:
    status: int = 0
    content_type: bytes = b""
    chunks: list[bytes] = field(default_factory=list)
    settled: bool = False  # stored, or the key given back


class IdempotencyMiddleware(ASGIMiddleware):
    """Applies `Idempotency-Key` to POST commands; runs after authentication."""

    scopes = (ScopeType.HTTP,)

    def __init__(self, store: IdempotencyStore, bridge: SyncBridge) -> None:
        self.store, self.bridge = store, bridge

    @staticmethod
    def should_bypass_for_scope(scope: Scope) -> bool:
        return scope.get("method") != "POST" or not COVERED.match(scope["path"])

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        raw = dict(scope["headers"]).get(HEADER.encode())
        if raw is None:
            await next_app(scope, receive, send)
            return
        key = raw.decode("latin-1")
        if not VALID_KEY.fullmatch(key):
            raise invalid("Idempotency-Key", "1 to 255 printable ASCII characters")
        user = caller_key(scope)
        http = cast("HTTPScope", scope)
        body = await Request[object, object, State](scope, receive).body()  # kept for the handler
        claim = await self.bridge(
            self.store.claim, user, key, http["method"], http["path"], request_hash(http, body)
        )
        if claim == "reused":
            raise ApiError(
                422,
                "this Idempotency-Key was used for a different request",
                "IDEMPOTENCY_KEY_REUSED",
            )
        if claim == "in_progress":
            raise ApiError(
                409,
                "a request with this Idempotency-Key is still in progress",
                "IDEMPOTENCY_IN_PROGRESS",
                **{"Retry-After": "1"},
            )
        if isinstance(claim, Stored) and claim.body is not None:
            await _replay(claim, send)
        elif isinstance(claim, Stored):
            await next_app(scope, receive, send)  # a stream: the handler replays it from the log
        else:
            scope.setdefault("state", {})[_NEW_KEY] = claim == NEW
            await self._first(user, key, scope, receive, send, next_app)

    async def _first(
        self, user: str, key: str, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp
    ) -> None:
        answer = _Answer()

        async def recording(message: Message) -> None:
            if message["type"] == "http.response.start":
                answer.status = message["status"]
                answer.content_type = dict(message.get("headers", [])).get(b"content-type", b"")
                if answer.content_type.startswith(STREAM):
                    await self._settle(user, key, answer, streamed=True)
            elif message["type"] == "http.response.body" and not answer.settled:
                answer.chunks.append(message.get("body", b""))
                if not message.get("more_body", False):
                    await self._settle(user, key, answer)  # before the client can retry
            await send(message)

        try:
            await next_app(scope, receive, recording)
        finally:
            if not answer.settled:
                await self.bridge(self.store.release, user, key)

    async def _settle(
        self, user: str, key: str, answer: _Answer, *, streamed: bool = False
    ) -> None:
        if answer.status >= 500:
            await self.bridge(self.store.release, user, key)
        else:
            body = None if streamed else b"".join(answer.chunks)
            stored = Stored(answer.status, answer.content_type.decode("latin-1"), body)
            await self.bridge(self.store.complete, user, key, stored)
        answer.settled = True


def new_key(scope: Scope) -> bool:
    """Whether this request claimed its `Idempotency-Key` for the first time (so nothing
    was written under the key before it)."""
    return bool(scope.get("state", {}).get(_NEW_KEY, False))


async def _replay(stored: Stored, send: Send) -> None:
    body = stored.body or b""
    headers = [
        (b"content-length", str(len(body)).encode()),
        (b"idempotent-replayed", b"true"),
    ]
    if stored.content_type:
        headers.append((b"content-type", stored.content_type.encode("latin-1")))
    await send({"type": "http.response.start", "status": stored.status, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})
