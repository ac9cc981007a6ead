"""`AnthropicLLM`: the `LLM` port on Anthropic's streaming Messages API."""

from __future__ import annotations

import asyncio
import logging
import math
import random
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass

import anthropic
import httpx2
from anthropic import omit

from adapters.llm.anthropic_wire import WireRequest, to_model_turn, to_wire
from adapters.loopback import is_loopback_host
from application.ports import (
    LLMBadRequest,
    LLMConnectionError,
    LLMError,
    LLMNotConfigured,
    LLMOverloaded,
    LLMRateLimited,
)
from domain.conversation import ModelRequest, StreamItem, TextDelta, ThinkingDelta, ThinkingStarted

log = logging.getLogger(__name__)

Sleep = Callable[[float], Awaitable[object]]

# The switch against real model calls (like pydantic-ai's `ALLOW_MODEL_REQUESTS`): the
# test suite sets it to False, and then only a server on this machine (a fake) is called.
ALLOW_MODEL_REQUESTS = True


class ModelRequestsForbidden(RuntimeError):
    """A real model call was attempted while `ALLOW_MODEL_REQUESTS` is False.

    Not an `LLMError`: it is a bug in a test, not a failure a run should keep.
    """


def check_model_request_allowed(base_url: str) -> None:
    """Refuse a call to anything but a loopback server while requests are switched off."""
    if ALLOW_MODEL_REQUESTS or is_loopback_host(httpx2.URL(base_url).host):
        return
    raise ModelRequestsForbidden(
        f"real model requests are switched off (ALLOW_MODEL_REQUESTS is False); "
        f"refused a call to {base_url}"
    )


class _IncompleteStream(Exception):
    """The body ended cleanly but before `message_stop`: the turn is not whole."""


# The SDK wraps failures before the response starts, but a body cut off mid-way
# surfaces as the raw httpx2 error from the SSE iterator.
_VENDOR_ERRORS = (anthropic.AnthropicError, httpx2.TransportError, _IncompleteStream)


@dataclass(frozen=True)
class _Failure:
    """A vendor failure, classified: which port error it becomes, and whether to retry."""

    error: type[LLMError]
    retryable: bool
    message: str
    retry_after: float | None = None


@dataclass
class _Progress:
    yielded: bool = False


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
        self._max_retries = max_retries
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff
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
        attempt = 0
        while True:
            progress = _Progress()
            try:
                # aclosing: a caller that stops early releases the connection now, not at GC.
                async with aclosing(self._attempt(wire, progress)) as items:
                    async for item in items:
                        yield item
                return
            except _VENDOR_ERRORS as err:
                failure = _classify(err)
                if failure.retryable and progress.yielded:
                    message = f"{failure.message} (after part of the turn was streamed)"
                    raise failure.error(message, retryable=True) from err
                if not failure.retryable or attempt >= self._max_retries:
                    raise failure.error(failure.message, retryable=failure.retryable) from err
            delay = self._delay(attempt, failure.retry_after)
            attempt += 1
            log.warning(
                "%s; retry %d/%d in %.2fs", failure.message, attempt, self._max_retries, delay
            )
            await self._sleep(delay)

    async def _attempt(
        self, wire: WireRequest, progress: _Progress
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

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self._max_backoff)
        ceiling = min(self._max_backoff, self._initial_backoff * 2.0**attempt)
        # Jitter keeps sessions that failed together from retrying in lockstep.
        return ceiling * random.uniform(0.5, 1.0)


def _classify(err: Exception) -> _Failure:
    if isinstance(err, anthropic.APIStatusError):
        return _classify_status(err)
    if isinstance(err, anthropic.APIConnectionError | httpx2.TransportError | _IncompleteStream):
        return _Failure(LLMConnectionError, True, f"Anthropic connection failed: {err}")
    if isinstance(err, anthropic.CredentialsError):
        return _Failure(LLMNotConfigured, False, f"Anthropic credentials unusable: {err}")
    return _Failure(LLMError, False, f"Anthropic client error: {err}")


def _classify_status(err: anthropic.APIStatusError) -> _Failure:
    status = err.status_code
    # An error sent inside a 200 stream has only its body's type to go by.
    kind = err.type or ""
    message = f"Anthropic answered {status} {kind}: {err.api_message or err.message}"
    if status == 429 or kind == "rate_limit_error":
        return _Failure(LLMRateLimited, True, message, _retry_after(err.response.headers))
    if status >= 500 or kind in ("overloaded_error", "api_error"):
        return _Failure(LLMOverloaded, True, message, _retry_after(err.response.headers))
    if status == 408 or kind == "timeout_error":
        return _Failure(LLMConnectionError, True, message)
    if status == 401:
        # Same remedy as a missing key: whoever runs the service must fix the key.
        return _Failure(LLMNotConfigured, False, message)
    return _Failure(LLMBadRequest, False, message)


def _retry_after(headers: httpx2.Headers) -> float | None:
    """Seconds the server asked us to wait, from `retry-after-ms` or `retry-after`."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            continue  # an HTTP date: our own backoff will do
        if math.isfinite(seconds) and seconds >= 0:
            return seconds
    return None
