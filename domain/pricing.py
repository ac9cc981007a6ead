"""What model calls cost, in exact US dollars, from a versioned table of per-token rates.

A `PriceTable` maps model names to rates (USD per million tokens) and turns a call's
`Usage` into a `Cost` that records the table's version, so a figure stored today can
be explained after the prices change. Money is `Decimal` throughout, never float;
amounts are exact and only `usd_text` rounds, for display.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal

from domain.conversation import CacheTtl, Usage
from domain.errors import InvalidCommand
from domain.model_names import parse_model_name

PER_MILLION = Decimal(1_000_000)
_MICRO_USD = Decimal("0.000001")


@dataclass(frozen=True)
class Rates:
    """USD per million tokens, by kind of token."""

    input: Decimal
    output: Decimal
    cache_write_5m: Decimal
    cache_write_1h: Decimal
    cache_read: Decimal

    def cache_write(self, cache_ttl: CacheTtl) -> Decimal:
        """The rate for writing the prompt cache with the given lifetime."""
        return self.cache_write_1h if cache_ttl == "1h" else self.cache_write_5m


@dataclass(frozen=True)
class Tier:
    """Rates that replace the base rates for a call whose whole input is above a size."""

    above_input_tokens: int  # input + cache read + cache write, strictly above this
    rates: Rates


@dataclass(frozen=True)
class ModelPrice:
    """The rates of the models whose names fully match `pattern` (a regular expression)."""

    pattern: str
    rates: Rates
    tiers: tuple[Tier, ...] = ()  # ascending by above_input_tokens

    def matches(self, model: str) -> bool:
        return re.fullmatch(self.pattern, model) is not None

    def rates_for(self, input_tokens: int) -> Rates:
        """The rates of the highest tier `input_tokens` is above, else the base rates."""
        above = [t for t in self.tiers if input_tokens > t.above_input_tokens]
        if not above:
            return self.rates
        return max(above, key=lambda t: t.above_input_tokens).rates


@dataclass(frozen=True)
class Cost:
    """What one call cost, exact (not rounded), and which price table said so."""

    usd: Decimal
    price_version: str
    priced: bool  # False: no price matched the model, and usd is 0


@dataclass(frozen=True)
class PriceTable:
    """Model prices under one version; the first entry whose pattern matches wins."""

    version: str
    models: tuple[ModelPrice, ...]

    def price_of(self, model: str) -> ModelPrice | None:
        """The price of `model`, by the name it is billed under (`anthropic:x` is `x`;
        other providers' models are matched as `provider:model`)."""
        name = billed_name(model)
        return next((p for p in self.models if p.matches(name)), None)

    def cost(self, model: str, usage: Usage, cache_ttl: CacheTtl = "5m") -> Cost:
        """What a call to `model` that consumed `usage` cost; cache writes at `cache_ttl`."""
        price = self.price_of(model)
        if price is None:
            return Cost(Decimal(0), self.version, priced=False)
        whole_input = usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens
        r = price.rates_for(whole_input)
        micro = (
            usage.input_tokens * r.input
            + usage.output_tokens * r.output
            + usage.cache_read_tokens * r.cache_read
            + usage.cache_write_tokens * r.cache_write(cache_ttl)
        )
        return Cost(micro / PER_MILLION, self.version, priced=True)

    def worst_case(
        self, model: str, input_tokens: int, max_tokens: int, cache_ttl: CacheTtl = "5m"
    ) -> Decimal:
        """The most a call with about `input_tokens` of input and `max_tokens` can cost.

        Every input token is charged at its dearest possible rate (plain input, cache
        write or cache read, whichever costs most) and every allowed output token at the
        output rate; 0 for a model the table does not price.
        """
        price = self.price_of(model)
        if price is None:
            return Decimal(0)
        r = price.rates_for(input_tokens)
        dearest_input = max(r.input, r.cache_write(cache_ttl), r.cache_read)
        return (input_tokens * dearest_input + max_tokens * r.output) / PER_MILLION


def billed_name(model: str) -> str:
    """The name `model` is billed and priced under (itself if it names no provider)."""
    try:
        return parse_model_name(model).billed_as
    except InvalidCommand:
        return model


def usd_text(amount: Decimal) -> str:
    """`amount` to six decimal places (banker's rounding), e.g. "0.012225"."""
    return f"{amount.quantize(_MICRO_USD, rounding=ROUND_HALF_EVEN):f}"
