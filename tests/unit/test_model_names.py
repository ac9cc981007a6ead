"""Models by name (`provider:model`), the router that sends each call to its provider,
and the prices each provider's models are billed at."""

from __future__ import annotations

from collections.abc import AsyncIterator
from decimal import Decimal

import pytest

from adapters.config.price_file import load_prices
from adapters.llm.router import ModelRouter
from application.ports import LLM, LLMBadRequest, LLMNotConfigured
from domain.conversation import (
    Message,
    ModelRequest,
    ModelTurn,
    StreamItem,
    TextBlock,
    TextDelta,
    Usage,
)
from domain.errors import InvalidCommand
from domain.model_names import ModelName, parse_model_name
from domain.values import SessionSettings


@pytest.mark.parametrize(
    ("text", "provider", "model"),
    [
        ("anthropic:claude-sonnet-4-5", "anthropic", "claude-sonnet-4-5"),
        ("openai:gpt-4.1", "openai", "gpt-4.1"),
        ("gemini:gemini-2.5-pro", "gemini", "gemini-2.5-pro"),
        ("openai:llama3.1:8b", "openai", "llama3.1:8b"),  # Ollama's tags keep their colon
        ("claude-sonnet-5-5", "anthropic", "claude-sonnet-5-5"),
        ("gpt-4o-mini", "openai", "gpt-4o-mini"),
        ("o3", "openai", "o3"),
        ("o4-mini", "openai", "o4-mini"),
        ("gemini-2.5-flash", "gemini", "gemini-2.5-flash"),
        ("some-model", "anthropic", "some-model"),  # as every bare name was before
    ],
)
def test_a_name_says_its_provider_and_model(text: str, provider: str, model: str) -> None:
    assert parse_model_name(text) == ModelName(provider, model)  # type: ignore[arg-type]


@pytest.mark.parametrize("text", ["mistral:large", "azure:gpt-4.1", "openai:", "  ", "llama3:8b"])
def test_an_unknown_provider_or_an_empty_model_is_refused_clearly(text: str) -> None:
    with pytest.raises(InvalidCommand, match=r"provider|model"):
        parse_model_name(text)


def test_a_session_setting_names_a_model_the_router_can_reach() -> None:
    assert SessionSettings.of({"model": "gemini:gemini-2.5-pro"}).model == "gemini:gemini-2.5-pro"
    with pytest.raises(InvalidCommand, match="unknown model provider 'mistral'"):
        SessionSettings.of({"model": "mistral:large"})
    with pytest.raises(InvalidCommand, match="string"):
        SessionSettings.of({"model": 42})


class Echo:
    """A provider that answers with the model it was asked for, as the vendor names it."""

    def __init__(self, answered: str | None = None) -> None:
        self.asked: list[str | None] = []
        self.answered = answered

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        self.asked.append(request.model)
        yield TextDelta("hi")
        model = self.answered or str(request.model)
        yield ModelTurn((TextBlock("hi"),), "end_turn", Usage(1, 1), model)


def ask(model: str | None) -> ModelRequest:
    return ModelRequest("", (), (Message("user", (TextBlock("hello"),)),), model=model)


async def turn_of(llm: LLM, request: ModelRequest) -> ModelTurn:
    items = [item async for item in llm.stream(request)]
    assert isinstance(items[-1], ModelTurn)
    return items[-1]


async def test_each_call_goes_to_its_provider_without_the_prefix() -> None:
    anthropic, openai, gemini = Echo(), Echo("gpt-4.1-2025-04-14"), Echo()
    router = ModelRouter(
        {"anthropic": lambda: anthropic, "openai": lambda: openai, "gemini": lambda: gemini},
        default_model="claude-sonnet-5-5",
    )

    assert (await turn_of(router, ask("openai:gpt-4.1"))).model == "openai:gpt-4.1-2025-04-14"
    assert (await turn_of(router, ask("gemini:gemini-2.5-pro"))).model == ("gemini:gemini-2.5-pro")
    # Anthropic's models keep their own names (as stored calls and prices always had).
    assert (await turn_of(router, ask("anthropic:claude-opus-4-5"))).model == "claude-opus-4-5"
    assert (await turn_of(router, ask(None))).model == "claude-sonnet-5-5"
    assert openai.asked == ["gpt-4.1"] and gemini.asked == ["gemini-2.5-pro"]
    assert anthropic.asked == ["claude-opus-4-5", "claude-sonnet-5-5"]


async def test_a_provider_without_a_key_fails_its_calls_saying_which_key_to_set() -> None:
    def no_key() -> LLM:
        raise LLMNotConfigured("No Gemini API key: set GEMINI_API_KEY (or GOOGLE_API_KEY)")

    built: list[str] = []

    def anthropic() -> LLM:
        built.append("anthropic")
        return Echo()

    router = ModelRouter({"anthropic": anthropic, "gemini": no_key}, default_model="claude-x")
    with pytest.raises(LLMNotConfigured, match="GEMINI_API_KEY"):
        await turn_of(router, ask("gemini:gemini-2.5-pro"))
    assert built == []  # a provider is built only when a call names one of its models
    with pytest.raises(LLMBadRequest, match="unknown model provider"):
        await turn_of(router, ask("mistral:large"))
    with pytest.raises(LLMNotConfigured, match="openai"):
        await turn_of(router, ask("openai:gpt-4.1"))


@pytest.mark.parametrize(
    ("model", "usd"),
    [
        # 100K each of uncached input, output and cache reads (whole input 200K: the base
        # rates): a tenth of input + output + cached rates.
        ("openai:gpt-4.1-2025-04-14", "1.05"),
        ("openai:gpt-4.1-mini", "0.21"),
        ("gemini:gemini-2.5-pro", "1.1375"),
        ("gemini:gemini-2.5-flash", "0.283"),
        ("claude-sonnet-4-5", "1.83"),
        ("anthropic:claude-sonnet-4-5", "1.83"),
    ],
)
def test_each_providers_models_are_priced_with_their_cache_rates(model: str, usd: str) -> None:
    cost = load_prices().cost(model, Usage(100_000, 100_000, cache_read_tokens=100_000))
    assert cost.priced and cost.usd == Decimal(usd)


def test_a_model_on_your_own_server_is_counted_but_unpriced() -> None:
    cost = load_prices().cost("openai:llama3.1:8b", Usage(1000, 1000))
    assert not cost.priced and cost.usd == 0
