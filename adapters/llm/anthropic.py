"""`AnthropicLLM`: the `LLM` port on Anthropic's streaming Messages API."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from contextlib import aclosing

import anthropic
import httpx2
from anthropic import omit

from adapters.llm.anthropic_wire import WireRequest, to_model_turn, to_wire
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
)
from domain.conversation import ModelRequest, StreamItem, TextDelta, ThinkingDelta, ThinkingStarted


class _IncompleteStream(Exception):
    """The body ended cleanly but before `message_stop`: the turn is not whole."""


# The SDK wraps failures before the response starts, but a body cut off mid-way
# surfaces as the raw httpx2 error from the SSE iterator.
_VENDOR_ERRORS = (anthropic.AnthropicError, httpx2.TransportError, _IncompleteStream)


class AnthropicLLM:
    """The `LLM` port on Anthropic's Messages API, streamed, with our own retries.

    Retried up to `max_retries` times, after exponential backoff with jitter or the
    server's `retry-after` (capped at `max_backoff`): 408, 429, 5xx including 529,
    overloaded/api errors sent inside the stream, dropped connections, timeouts, and
    streams cut off before `message_stop`. Other errors are raised at once.

    A failure is retried only while nothing has been yielded for this call. Once a
    delta has reached the caller, the failure is raised instead, as a port error with
    `retryable=True`: deltas are relayed live and viewers expect them to add up to
    the final turn, so a silent restart would run two attempts' text together with no
    way for the caller to tell. The runner knows when it gets the error, and can
    tell its viewers before it starts the step again.

    A turn's thinking is announced when its first block starts (`ThinkingStarted`), then
    streamed; it comes back in the turn with its signature, redacted thinking as it came.
    """

    def __init__(
        self,
        client: anthropic.AsyncAnthropic,
        *,
        model: str,
        max_tokens: int,
        max_retries: int = 4,
        initial_backoff: float = 0.5,
        max_backoff: float = 20.0,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        # SDK retries underneath ours would multiply the attempts and hide the delays.
        self._client = client if client.max_retries == 0 else client.with_options(max_retries=0)
        self._model = model
        self._max_tokens = max_tokens
        self._policy = RetryPolicy(max_retries, initial_backoff, max_backoff)
        self._sleep = sleep

    @classmethod
    def from_env(
        cls,
        *,
        model: str,
        max_tokens: int,
        max_retries: int = 4,
        initial_backoff: float = 0.5,
        max_backoff: float = 20.0,
        sleep: Sleep = asyncio.sleep,
    ) -> AnthropicLLM:
        """An adapter on a client that finds its key and base URL as the SDK does.

        Raises `LLMNotConfigured` when the SDK finds no credentials.
        """
        try:
            client = anthropic.AsyncAnthropic(max_retries=0)
        except anthropic.CredentialsError as err:
            raise LLMNotConfigured(f"Anthropic credentials could not be loaded: {err}") from err
        if client.api_key is None and client.auth_token is None and client.credentials is None:
            raise LLMNotConfigured("No Anthropic API key: set ANTHROPIC_API_KEY")
        return cls(
            client,
            model=model,
            max_tokens=max_tokens,
            max_retries=max_retries,
            initial_backoff=initial_backoff,
            max_backoff=max_backoff,
            sleep=sleep,
        )

    async def aclose(self) -> None:
        """Close the SDK client's connections."""
        await self._client.close()

    async def stream(self, request: ModelRequest) -> AsyncGenerator[StreamItem, None]:
        check_model_request_allowed(str(self._client.base_url))
        wire = to_wire(request, model=self._model, max_tokens=self._max_tokens)
        items = stream_with_retries(
            lambda progress: self._attempt(wire, progress), _classify, self._policy, self._sleep
        )
        async with aclosing(items):
            async for item in items:
                yield item

    async def _attempt(
        self, wire: WireRequest, progress: Progress
    ) -> AsyncGenerator[StreamItem, None]:
        async with self._client.messages.stream(
            model=wire.model,
            max_tokens=wire.max_tokens,
            messages=wire.messages,
            system=wire.system or omit,
            tools=wire.tools or omit,
            thinking=wire.thinking or omit,
            metadata=wire.metadata or omit,
        ) as stream:
            stopped = thought = False
            async for event in stream:
                if event.type == "content_block_start":
                    # Once a turn: its stored turn ends it, however many blocks it has.
                    kind = event.content_block.type
                    if kind in ("thinking", "redacted_thinking") and not thought:
                        thought = progress.yielded = True
                        yield ThinkingStarted()
                elif event.type == "content_block_delta":
                    if event.delta.type == "text_delta":
                        progress.yielded = True
                        yield TextDelta(event.delta.text)
                    elif event.delta.type == "thinking_delta":
                        progress.yielded = True
                        yield ThinkingDelta(event.delta.thinking)
                elif event.type == "message_stop":
                    stopped = True
            message = await stream.get_final_message() if stopped else None
        if message is None or message.stop_reason is None:
            raise _IncompleteStream("Anthropic stream ended before message_stop")
        yield to_model_turn(message, message.stop_reason)


def _classify(err: Exception) -> Failure | None:
    if not isinstance(err, _VENDOR_ERRORS):
        return None
    if isinstance(err, anthropic.APIStatusError):
        return _classify_status(err)
    if isinstance(err, anthropic.APIConnectionError | httpx2.TransportError | _IncompleteStream):
        return Failure(LLMConnectionError, True, f"Anthropic connection failed: {err}")
    if isinstance(err, anthropic.CredentialsError):
        return Failure(LLMNotConfigured, False, f"Anthropic credentials unusable: {err}")
    return Failure(LLMError, False, f"Anthropic client error: {err}")


def _classify_status(err: anthropic.APIStatusError) -> Failure:
    status = err.status_code
    # An error sent inside a 200 stream has only its body's type to go by.
    kind = err.type or ""
    message = f"Anthropic answered {status} {kind}: {err.api_message or err.message}"
    if status == 429 or kind == "rate_limit_error":
        return Failure(LLMRateLimited, True, message, retry_after(err.response.headers))
    if status >= 500 or kind in ("overloaded_error", "api_error"):
        return Failure(LLMOverloaded, True, message, retry_after(err.response.headers))
    if status == 408 or kind == "timeout_error":
        return Failure(LLMConnectionError, True, message)
    if status == 401:
        # Same remedy as a missing key: whoever runs the service must fix the key.
        return Failure(LLMNotConfigured, False, message)
    if status in (400, 413) and "too long" in message:
        return Failure(LLMContextTooLong, False, message)  # "prompt is too long: N tokens"
    return Failure(LLMBadRequest, False, message)
