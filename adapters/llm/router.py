"""`ModelRouter`: the `LLM` port over every provider, each call sent to the provider its
model names (`provider:model`, see `domain.model_names`).

Each provider's adapter is built on first use, so a provider with no key costs nothing
until a session names one of its models, and then fails that call with the reason
(`LLMNotConfigured`: which key to set), not the start. The turn comes back named as it
is billed: Anthropic's models by their own names, others as `provider:model`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable, Mapping
from contextlib import aclosing
from dataclasses import replace

from adapters.llm.unconfigured import UnconfiguredLLM, not_configured
from application.ports import LLM, LLMBadRequest, LLMNotConfigured
from domain.conversation import ModelRequest, ModelTurn, StreamItem
from domain.errors import InvalidCommand
from domain.model_names import ModelName, Provider, parse_model_name, qualified

log = logging.getLogger(__name__)

# Builds a provider's adapter; raises `LLMNotConfigured` when its key is missing.
Factory = Callable[[], LLM]


class ModelRouter:
    """Sends each request to its model's provider, `default_model` when it names none."""

    def __init__(self, factories: Mapping[Provider, Factory], *, default_model: str) -> None:
        self._factories = dict(factories)
        self._built: dict[Provider, LLM] = {}
        self.default_model = default_model

    def provider(self, provider: Provider) -> LLM:
        """The provider's adapter, built now if it was not yet (an unconfigured one when
        its key is missing: every call to it then fails saying which key to set)."""
        llm = self._built.get(provider)
        if llm is None:
            factory = self._factories.get(provider)
            if factory is None:
                llm = UnconfiguredLLM(f"no adapter for the model provider {provider!r}")
            else:
                try:
                    llm = factory()
                except LLMNotConfigured as e:
                    log.warning("model provider %s is not configured: %s", provider, e)
                    llm = UnconfiguredLLM(not_configured(str(e)))
            self._built[provider] = llm
        return llm

    async def stream(self, request: ModelRequest) -> AsyncGenerator[StreamItem, None]:
        name = self._name(request.model or self.default_model)
        items = self.provider(name.provider).stream(replace(request, model=name.model))
        async with aclosing(items):  # type: ignore[type-var]
            async for item in items:
                if isinstance(item, ModelTurn):
                    item = replace(item, model=qualified(name, item.model))
                yield item

    async def aclose(self) -> None:
        """Close the clients of the providers used."""
        for llm in self._built.values():
            close = getattr(llm, "aclose", None)
            if close is not None:
                await close()

    @staticmethod
    def _name(text: str) -> ModelName:
        try:
            return parse_model_name(text)
        except InvalidCommand as e:
            raise LLMBadRequest(str(e)) from None
