"""The model used when none is configured: every call fails with a clear reason."""

from __future__ import annotations

from collections.abc import AsyncIterator

from application.ports import LLMNotConfigured
from domain.conversation import ModelRequest, StreamItem

# How to get a real model, and the one that needs no key.
PROVIDER_KEYS = (
    "set ANTHROPIC_API_KEY (anthropic: models), OPENAI_API_KEY (openai:, and OPENAI_BASE_URL "
    "for an OpenAI-compatible server such as Ollama) or GEMINI_API_KEY (gemini:), with "
    "TOKENDANCE_MODEL naming the model"
)
WAYS_TO_A_MODEL = (
    f"{PROVIDER_KEYS}; or start the server with TOKENDANCE_LLM=scripted:demo for the "
    "bundled scripted model (no key; canned answers)"
)
HOW_TO_CONFIGURE = (
    "no model is configured: TOKENDANCE_MODEL's provider has no key (runs fail with "
    f"LLM_NOT_CONFIGURED): {WAYS_TO_A_MODEL}"
)


def not_configured(reason: str) -> str:
    """`reason` (which key a provider misses) with every way to get a model."""
    return f"{reason}. To get a model, {WAYS_TO_A_MODEL}"


class UnconfiguredLLM:
    """Fails every call with `LLMNotConfigured`, so a run ends with that code."""

    def __init__(self, reason: str = HOW_TO_CONFIGURE) -> None:
        self.reason = reason

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        raise LLMNotConfigured(self.reason)
        yield  # an async generator, like every model
