"""`GeminiLLM`: the `LLM` port on Google's Gemini API through the official `google-genai`
SDK (seed 002 plans `core/llm/gemini.py`; this is it).

Streamed (`streamGenerateContent`), with the retries every adapter shares
(`adapters/llm/retries.py`); the SDK's own retries are off. The key comes from
`GEMINI_API_KEY` or `GOOGLE_API_KEY`, the base URL from `GOOGLE_GEMINI_BASE_URL` when
set (a proxy, or the local fake in tests), as the SDK reads them. Prompt caching is
Gemini's implicit caching, which the byte-stable contents keep (`gemini_wire`).
"""

from __future__ import annotations

import asyncio
import math
import os
from collections.abc import AsyncGenerator

import httpx
import httpx2
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from adapters.llm.gemini_wire import TurnBuilder, to_config, to_contents
from adapters.llm.retries import (
    Failure,
    Progress,
    RetryPolicy,
    Sleep,
    check_model_request_allowed,
    retry_after,
    stream_with_retries,
)
from application.ports import (
    LLMBadRequest,
    LLMConnectionError,
    LLMContextTooLong,
    LLMError,
    LLMNotConfigured,
    LLMOverloaded,
    LLMRateLimited,
    LLMRefused,
)
from domain.conversation import ModelRequest, StreamItem, TextDelta, ThinkingDelta, ThinkingStarted

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/"


class _IncompleteStream(Exception):
    """The body ended cleanly but with no finish reason: the turn is not whole."""


class _PromptBlocked(Exception):
    """Gemini refused the prompt itself (`prompt_feedback.block_reason`)."""


_TRANSPORT: tuple[type[Exception], ...] = (
    httpx.TransportError, httpx2.TransportError, OSError, asyncio.TimeoutError,
)  # fmt: skip
try:  # the SDK streams through aiohttp when it is installed
    import aiohttp

    _TRANSPORT = (*_TRANSPORT, aiohttp.ClientError)
except ImportError:  # pragma: no cover - httpx then
    pass


class GeminiLLM:
    """The `LLM` port on the Gemini API, streamed."""

    def __init__(
        self,
        client: genai.Client,
        *,
        model: str,
        max_tokens: int,
        base_url: str = DEFAULT_BASE_URL,
        max_retries: int = 4,
        initial_backoff: float = 0.5,
        max_backoff: float = 20.0,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        self._client = client
        self._model = model
        self._max_tokens = max_tokens
        self._base_url = base_url
        self._policy = RetryPolicy(max_retries, initial_backoff, max_backoff)
        self._sleep = sleep

    @classmethod
    def connect(
        cls, *, api_key: str, base_url: str | None, model: str, max_tokens: int, **options: object
    ) -> GeminiLLM:
        """An adapter on a new client for `api_key` at `base_url` (None: Google's)."""
        http = types.HttpOptions(
            base_url=base_url, retry_options=types.HttpRetryOptions(attempts=1)
        )
        client = genai.Client(api_key=api_key, http_options=http)
        return cls(client, model=model, max_tokens=max_tokens,
                   base_url=base_url or DEFAULT_BASE_URL, **options)  # type: ignore[arg-type]  # fmt: skip

    @classmethod
    def from_env(cls, *, model: str, max_tokens: int) -> GeminiLLM:
        """An adapter with the key and base URL the environment gives, as the SDK reads
        them; `LLMNotConfigured` when there is no key."""
        key = os.environ.get("GOOGLE_API_KEY") or os.environ.get("GEMINI_API_KEY")
        if not key:
            raise LLMNotConfigured("No Gemini API key: set GEMINI_API_KEY (or GOOGLE_API_KEY)")
        base_url = os.environ.get("GOOGLE_GEMINI_BASE_URL") or None
        return cls.connect(api_key=key, base_url=base_url, model=model, max_tokens=max_tokens)

    async def aclose(self) -> None:
        await self._client.aio.aclose()

    async def stream(self, request: ModelRequest) -> AsyncGenerator[StreamItem, None]:
        check_model_request_allowed(self._base_url)
        items = stream_with_retries(
            lambda progress: self._attempt(request, progress), _classify, self._policy, self._sleep
        )
        try:
            async for item in items:
                yield item
        finally:
            await items.aclose()

    async def _attempt(
        self, request: ModelRequest, progress: Progress
    ) -> AsyncGenerator[StreamItem, None]:
        model = request.model or self._model
        contents = to_contents(request.messages)
        turn = TurnBuilder(model=model, contents=contents)
        responses = await self._client.aio.models.generate_content_stream(
            model=model,
            contents=contents,
            config=to_config(request, max_tokens=self._max_tokens),
        )
        async for response in responses:
            feedback = response.prompt_feedback
            if feedback is not None and feedback.block_reason is not None:
                raise _PromptBlocked(f"Gemini blocked the prompt: {feedback.block_reason.value}")
            turn.model = response.model_version or turn.model
            if response.usage_metadata is not None:
                turn.set_usage(response.usage_metadata)
            for candidate in response.candidates or []:
                for part in (candidate.content.parts if candidate.content else None) or []:
                    if part.thought and part.text:
                        if not turn.thinking:
                            yield ThinkingStarted()
                        progress.yielded = True
                        turn.thinking.append(part.text)
                        yield ThinkingDelta(part.text)
                    elif part.function_call is not None:
                        turn.add_call(part.function_call, part.thought_signature)
                    elif part.text:
                        progress.yielded = True
                        turn.add_text(part.text)
                        yield TextDelta(part.text)
                if candidate.finish_reason is not None:
                    turn.finish_reason = candidate.finish_reason.value
        if turn.finish_reason is None:
            raise _IncompleteStream("the Gemini stream ended without a finish reason")
        yield turn.turn()


def _classify(err: Exception) -> Failure | None:
    if isinstance(err, genai_errors.APIError):
        return _classify_status(err)
    if isinstance(err, _PromptBlocked):
        return Failure(LLMRefused, False, str(err))
    if isinstance(err, (_IncompleteStream, *_TRANSPORT)):
        return Failure(LLMConnectionError, True, f"Gemini connection failed: {err!r}")
    return None


def _classify_status(err: genai_errors.APIError) -> Failure:
    status, kind = err.code, err.status or ""
    message = f"Gemini answered {status} {kind}: {err.message or err}"
    details = _details(err)
    reasons = {d.get("reason") for d in details}
    if status == 429 or kind == "RESOURCE_EXHAUSTED":
        return Failure(LLMRateLimited, True, message, _wait(err, details))
    if status >= 500 or kind in ("UNAVAILABLE", "INTERNAL", "DEADLINE_EXCEEDED"):
        return Failure(LLMOverloaded, True, message, _wait(err, details))
    # A wrong key is a 400 INVALID_ARGUMENT whose ErrorInfo says API_KEY_INVALID.
    if (
        status in (401, 403)
        or kind in ("UNAUTHENTICATED", "PERMISSION_DENIED")
        or reasons & {"API_KEY_INVALID", "API_KEY_EXPIRED"}
    ):
        return Failure(LLMNotConfigured, False, message)
    if "exceeds the maximum number of tokens" in message or "too long" in message:
        return Failure(LLMContextTooLong, False, message)
    if status < 400:
        return Failure(LLMError, False, message)
    return Failure(LLMBadRequest, False, message)


def _details(err: genai_errors.APIError) -> list[dict[str, object]]:
    """The error's google.rpc details (ErrorInfo, RetryInfo, ...), if it has any."""
    body = err.details if isinstance(err.details, dict) else {}
    error = body.get("error", body)
    details = error.get("details") if isinstance(error, dict) else None
    return [d for d in details if isinstance(d, dict)] if isinstance(details, list) else []


def _wait(err: genai_errors.APIError, details: list[dict[str, object]]) -> float | None:
    """Seconds to wait: the `retry-after` header, else the RetryInfo's `retryDelay`."""
    headers = getattr(err.response, "headers", None) or {}
    seconds = retry_after(headers)
    if seconds is not None:
        return seconds
    for detail in details:
        delay = detail.get("retryDelay")
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                seconds = float(delay[:-1])
            except ValueError:
                return None
            return seconds if math.isfinite(seconds) and seconds >= 0 else None
    return None
