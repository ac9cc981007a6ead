"""`OpenAILLM`: the `LLM` port on OpenAI's API through the official `openai` SDK.

Chat Completions (`api="chat"`, what every OpenAI-compatible server speaks: vLLM, Ollama,
OpenRouter, LiteLLM) or OpenAI's Responses API (`api="responses"`), streamed, with the
retries every adapter shares (`adapters/llm/retries.py`). The SDK finds the key and the
base URL (`OPENAI_API_KEY`, `OPENAI_BASE_URL`); a local server such as Ollama takes
any non-empty key. Prompt caching is OpenAI's own: automatic for a prefix that
repeats byte for byte, which the wire functions keep (`openai_wire.to_chat`).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncGenerator
from contextlib import aclosing
from typing import Any, Literal

import httpx2
import openai

from adapters.llm.openai_responses import ResponsesTurn, to_responses
from adapters.llm.openai_wire import TurnBuilder, call_seed, to_chat
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

OpenAIApi = Literal["chat", "responses"]


class _IncompleteStream(Exception):
    """The body ended cleanly but with no finish reason: the turn is not whole."""


_VENDOR_ERRORS = (openai.OpenAIError, httpx2.TransportError, _IncompleteStream)


class OpenAILLM:
    """The `LLM` port on OpenAI's API (or a compatible server's), streamed."""

    def __init__(
        self,
        client: openai.AsyncOpenAI,
        *,
        model: str,
        max_tokens: int,
        api: OpenAIApi = "chat",
        max_retries: int = 4,
        initial_backoff: float = 0.5,
        max_backoff: float = 20.0,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        # SDK retries underneath ours would multiply the attempts and hide the delays.
        self._client = client if client.max_retries == 0 else client.with_options(max_retries=0)
        self._model = model
        self._max_tokens = max_tokens
        self._api = api
        self._policy = RetryPolicy(max_retries, initial_backoff, max_backoff)
        self._sleep = sleep

    @classmethod
    def from_env(
        cls,
        *,
        model: str,
        max_tokens: int,
        api: str = "chat",
        max_retries: int = 4,
        initial_backoff: float = 0.5,
        max_backoff: float = 20.0,
        sleep: Sleep = asyncio.sleep,
    ) -> OpenAILLM:
        """An adapter on a client that finds its key and base URL as the SDK does
        (`OPENAI_API_KEY`, `OPENAI_BASE_URL`); `LLMNotConfigured` when it finds no key."""
        try:
            client = openai.AsyncOpenAI(max_retries=0)
        except openai.OpenAIError as err:  # the SDK found no key
            raise LLMNotConfigured(_NO_KEY) from err
        if not client.api_key:  # OPENAI_API_KEY set, but empty
            raise LLMNotConfigured(_NO_KEY)
        chosen: OpenAIApi = "responses" if api == "responses" else "chat"
        return cls(
            client,
            model=model,
            max_tokens=max_tokens,
            api=chosen,
            max_retries=max_retries,
            initial_backoff=initial_backoff,
            max_backoff=max_backoff,
            sleep=sleep,
        )

    async def aclose(self) -> None:
        await self._client.close()

    async def stream(self, request: ModelRequest) -> AsyncGenerator[StreamItem, None]:
        check_model_request_allowed(str(self._client.base_url))
        attempt = self._chat if self._api == "chat" else self._responses
        items = stream_with_retries(
            lambda progress: attempt(request, progress), self._classify, self._policy, self._sleep
        )
        async with aclosing(items):
            async for item in items:
                yield item

    async def _chat(
        self, request: ModelRequest, progress: Progress
    ) -> AsyncGenerator[StreamItem, None]:
        body = to_chat(request, model=self._model, max_tokens=self._max_tokens)
        turn = TurnBuilder(model=body["model"], seed=call_seed(body["messages"]))
        stream = await self._client.chat.completions.create(**body, stream=True)
        async with stream:
            async for chunk in stream:
                data: dict[str, Any] = chunk.to_dict()
                if data.get("error"):  # some gateways send an error as a chunk
                    raise _stream_error(data["error"], stream.response)
                turn.model = str(data.get("model") or turn.model)
                if data.get("usage"):
                    turn.set_usage(data["usage"])
                for choice in data.get("choices") or []:
                    delta = choice.get("delta") or {}
                    thought = delta.get("reasoning_content") or delta.get("reasoning")
                    if isinstance(thought, str) and thought:
                        if not turn.reasoning:
                            yield ThinkingStarted()
                        progress.yielded = True
                        turn.reasoning.append(thought)
                        yield ThinkingDelta(thought)
                    if delta.get("content"):
                        progress.yielded = True
                        turn.text.append(delta["content"])
                        yield TextDelta(delta["content"])
                    for call in delta.get("tool_calls") or []:
                        turn.add_call_delta(call)
                    if choice.get("finish_reason"):
                        turn.finish_reason = choice["finish_reason"]
        if turn.finish_reason is None:
            raise _IncompleteStream("the OpenAI stream ended without a finish reason")
        yield turn.turn()

    async def _responses(
        self, request: ModelRequest, progress: Progress
    ) -> AsyncGenerator[StreamItem, None]:
        body = to_responses(request, model=self._model, max_tokens=self._max_tokens)
        turn = ResponsesTurn(model=body["model"], seed=call_seed(body["input"]))
        stream = await self._client.responses.create(**body, stream=True)
        async with stream:
            async for event in stream:
                data: dict[str, Any] = event.to_dict()
                kind = data.get("type")
                if kind == "response.output_text.delta":
                    progress.yielded = True
                    yield TextDelta(str(data.get("delta") or ""))
                elif kind == "response.reasoning_summary_text.delta":
                    if not turn.thought:
                        turn.thought = True
                        yield ThinkingStarted()
                    progress.yielded = True
                    yield ThinkingDelta(str(data.get("delta") or ""))
                elif kind in ("response.completed", "response.incomplete"):
                    turn.finish(data["response"])
                elif kind in ("response.failed", "error"):
                    failed = (data.get("response") or {}).get("error") or data
                    raise _stream_error(failed, stream.response)
        if not turn.finished:
            raise _IncompleteStream("the OpenAI stream ended before response.completed")
        yield turn.turn()

    def _classify(self, err: Exception) -> Failure | None:
        failure = _classify(err)
        if failure is None:
            return None
        # The server's words go into errors a run keeps: never with a key in them.
        message = _redact(failure.message, self._client.api_key)
        return Failure(failure.error, failure.retryable, message, failure.retry_after)


_NO_KEY = (
    "No OpenAI API key: set OPENAI_API_KEY (and OPENAI_BASE_URL for an OpenAI-compatible "
    "server; a local one such as Ollama or vLLM takes any non-empty key)"
)

# What looks like a key, masked or not ("Incorrect API key provided: sk-proj-****abcd").
_KEYLIKE = re.compile(r"\bsk-[A-Za-z0-9_*.\-]+")


def _redact(message: str, api_key: str) -> str:
    if len(api_key) >= 8:
        message = message.replace(api_key, "[redacted]")
    return _KEYLIKE.sub("sk-[redacted]", message)


def _stream_error(error: object, response: httpx2.Response) -> openai.APIError:
    body = error if isinstance(error, dict) else {"message": str(error)}
    message = str(body.get("message") or "an error sent inside the stream")
    return openai.APIError(message, response.request, body=body)


def _classify(err: Exception) -> Failure | None:
    if not isinstance(err, _VENDOR_ERRORS):
        return None
    if isinstance(err, openai.APIStatusError):
        return _classify_status(err.status_code, err, err.response.headers)
    if isinstance(err, openai.APIConnectionError | httpx2.TransportError | _IncompleteStream):
        return Failure(LLMConnectionError, True, f"OpenAI connection failed: {err}")
    if isinstance(err, openai.APIError):  # an error sent inside a 200 stream
        return _classify_status(_status_of(err), err, {})
    return Failure(LLMError, False, f"OpenAI client error: {err}")


def _status_of(err: openai.APIError) -> int:
    """The status an error sent inside the stream stands for, from its code or type."""
    kind = f"{err.code or ''} {err.type or ''}".lower()
    if "rate_limit" in kind:
        return 429
    if any(k in kind for k in ("overloaded", "server_error", "unavailable", "timeout")):
        return 503
    return 400


def _classify_status(status: int, err: openai.APIError, headers: Any) -> Failure:
    code = (err.code or "").lower()
    message = f"OpenAI answered {status} {err.code or err.type or ''}: {err.message}".replace(
        "  ", " "
    )
    if status == 429:
        return Failure(LLMRateLimited, True, message, retry_after(headers))
    if status >= 500:
        return Failure(LLMOverloaded, True, message, retry_after(headers))
    if status == 408:
        return Failure(LLMConnectionError, True, message)
    if status in (401, 403):
        return Failure(LLMNotConfigured, False, message)
    lowered = err.message.lower()
    if code == "context_length_exceeded" or "maximum context length" in lowered:
        return Failure(LLMContextTooLong, False, message)
    if code in ("content_policy_violation", "content_filter") or "content policy" in lowered:
        return Failure(LLMRefused, False, message)
    return Failure(LLMBadRequest, False, message)
