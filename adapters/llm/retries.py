"""What every vendor adapter of the `LLM` port shares: the switch against real model
calls in tests, and one retry loop over a vendor's classified failures.

An adapter streams one attempt as an async generator and classifies the exceptions its
SDK raises into a `Failure`; `stream_with_retries` does the rest, the same way for every
vendor: backoff with jitter or the server's `retry-after`, and no silent restart once a
delta has reached the caller.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import aclosing
from dataclasses import dataclass
from urllib.parse import urlsplit

from adapters.loopback import is_loopback_host
from application.ports import LLMError
from domain.conversation import StreamItem

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
    if ALLOW_MODEL_REQUESTS or is_loopback_host(urlsplit(base_url).hostname or ""):
        return
    raise ModelRequestsForbidden(
        f"real model requests are switched off (ALLOW_MODEL_REQUESTS is False); "
        f"refused a call to {base_url}"
    )


@dataclass(frozen=True)
class Failure:
    """A vendor failure, classified: which port error it becomes, and whether to retry."""

    error: type[LLMError]
    retryable: bool
    message: str
    retry_after: float | None = None


@dataclass
class Progress:
    """Whether an attempt has yielded anything yet (then it is not retried silently)."""

    yielded: bool = False


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 4
    initial_backoff: float = 0.5
    max_backoff: float = 20.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, self.max_backoff)
        ceiling = min(self.max_backoff, self.initial_backoff * 2.0**attempt)
        # Jitter keeps sessions that failed together from retrying in lockstep.
        return ceiling * random.uniform(0.5, 1.0)


async def stream_with_retries(
    attempt: Callable[[Progress], AsyncGenerator[StreamItem, None]],
    classify: Callable[[Exception], Failure | None],
    policy: RetryPolicy,
    sleep: Sleep = asyncio.sleep,
) -> AsyncGenerator[StreamItem, None]:
    """Run `attempt` until it finishes, retrying what `classify` calls retryable.

    `classify` returns None for an exception that is not the vendor's (it propagates).
    A failure is retried only while nothing has been yielded for this call. Once a delta
    has reached the caller, the failure is raised instead, as a port error with
    `retryable=True`: deltas are relayed live and viewers expect them to add up to the
    final turn, so a silent restart would run two attempts' text together.
    """
    tries = 0
    while True:
        progress = Progress()
        try:
            # aclosing: a caller that stops early releases the connection now, not at GC.
            async with aclosing(attempt(progress)) as items:
                async for item in items:
                    yield item
            return
        except Exception as err:
            failure = classify(err)
            if failure is None:
                raise
            if failure.retryable and progress.yielded:
                message = f"{failure.message} (after part of the turn was streamed)"
                raise failure.error(message, retryable=True) from err
            if not failure.retryable or tries >= policy.max_retries:
                raise failure.error(failure.message, retryable=failure.retryable) from err
        delay = policy.delay(tries, failure.retry_after)
        tries += 1
        log.warning("%s; retry %d/%d in %.2fs", failure.message, tries, policy.max_retries, delay)
        await sleep(delay)


def retry_after(headers: Mapping[str, str]) -> float | None:
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
