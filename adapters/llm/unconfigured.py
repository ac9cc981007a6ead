"""The model used when none is configured: every call fails with a clear reason."""

from __future__ import annotations

from collections.abc import AsyncIterator

from application.ports import LLMNotConfigured
from domain.conversation import ModelRequest, StreamItem

HOW_TO_CONFIGURE = (
    "no model is configured: TOKENDANCE_MODEL's provider has no key (runs fail with "
    "LLM_NOT_CONFIGURED): set "
    "ANTHROPIC_API_KEY for anthropic: models, OPENAI_API_KEY (and OPENAI_BASE_URL for an "
    "OpenAI-compatible server) for openai:, GEMINI_API_KEY for gemini:; or "
    "TOKENDANCE_LLM=scripted:demo for the bundled scripted model (no key needed), or "
    "TOKENDANCE_LLM=scripted:<script.yaml> for your own"
)


class UnconfiguredLLM:
    """Fails every call with `LLMNotConfigured`, so a run ends with that code."""

    def __init__(self, reason: str = HOW_TO_CONFIGURE) -> None:
        self.reason = reason

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        raise LLMNotConfigured(self.reason)
        yield  # an async generator, like every model
