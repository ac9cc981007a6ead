"""Models by name: `provider:model`, as settings, sessions, workspaces and skills name them.

`anthropic:claude-sonnet-4-5`, `openai:gpt-4.1`, `gemini:gemini-2.5-pro`,
`openai:llama3.1:8b` (an Ollama model behind an OpenAI-compatible base URL: only the
first colon separates the provider). A bare name is the provider its family belongs
to (`claude-*` Anthropic, `gpt-*`/`o1`..`o9`/`chatgpt-*` OpenAI, `gemini-*` Gemini), and
any other bare name is Anthropic's, as every name was before providers had prefixes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, get_args

from domain.errors import InvalidCommand

Provider = Literal["anthropic", "openai", "gemini"]
PROVIDERS: tuple[Provider, ...] = get_args(Provider)

_FAMILIES: tuple[tuple[re.Pattern[str], Provider], ...] = (
    (re.compile(r"claude-.*"), "anthropic"),
    (re.compile(r"(gpt-|chatgpt-|o[1-9]\b|o[1-9]-).*"), "openai"),
    (re.compile(r"gemini-.*"), "gemini"),
)
_PREFIX = re.compile(r"([a-z][a-z0-9_-]*):(.*)")


@dataclass(frozen=True)
class ModelName:
    provider: Provider
    model: str  # as the provider names it

    def __str__(self) -> str:
        return f"{self.provider}:{self.model}"

    @property
    def billed_as(self) -> str:
        """How a call to it is named in usage and matched in the price table: Anthropic's
        models by their own names (as before providers had prefixes), others qualified."""
        return self.model if self.provider == "anthropic" else str(self)


def parse_model_name(text: str) -> ModelName:
    """The provider and model `text` names; `InvalidCommand` when it names neither."""
    name = text.strip()
    if not name:
        raise InvalidCommand("model must not be empty")
    prefixed = _PREFIX.fullmatch(name)
    if prefixed is not None and prefixed.group(1) in PROVIDERS:
        provider, model = prefixed.group(1), prefixed.group(2).strip()
        if not model:
            raise InvalidCommand(f"model {text!r} names no model after its provider")
        return ModelName(provider, model)  # type: ignore[arg-type]
    if prefixed is not None and not _bare_with_tag(name):
        raise InvalidCommand(
            f"unknown model provider {prefixed.group(1)!r} in {text!r}: use one of "
            f"{', '.join(f'{p}:' for p in PROVIDERS)} (e.g. openai:gpt-4.1)"
        )
    for pattern, provider in _FAMILIES:
        if pattern.fullmatch(name):
            return ModelName(provider, name)
    return ModelName("anthropic", name)


def _bare_with_tag(name: str) -> bool:
    """A bare name whose colon tags a version of a known family (`gpt-4o:latest`)."""
    head = name.split(":", 1)[0]
    return any(pattern.fullmatch(head) for pattern, _ in _FAMILIES)


def qualified(name: ModelName, reported: str) -> str:
    """The name a finished call is billed under: the model the vendor says answered."""
    return ModelName(name.provider, reported or name.model).billed_as
