from __future__ import annotations

import hashlib
from decimal import Decimal
from pathlib import Path

import pytest

from adapters.config.price_file import (
    PriceFileError,
    bundled_prices_path,
    load_prices,
    parse_prices,
)
from domain.conversation import Usage
from domain.pricing import Rates

BAD = Path("bad-prices.yaml")

GOOD = """\
version: "test-7"
models:
  - match: "claude-sonnet-.*"
    input: 3
    output: 15
    cache_write_5m: 3.75
    cache_write_1h: 6
    cache_read: 0.30
    tiers:
      - above_input_tokens: 200_000
        input: 6
        output: 22.50
        cache_write_5m: 7.50
        cache_write_1h: 12
        cache_read: 0.60
"""

# One model entry, lines 3-8 of a file that starts with `version:` and `models:`.
ENTRY = """\
  - match: "m"
    input: 1
    output: 2
    cache_write_5m: 3
    cache_write_1h: 4
    cache_read: 0.5
"""


def refusal(text: str) -> str:
    with pytest.raises(PriceFileError) as caught:
        parse_prices(text, BAD)
    return str(caught.value)


def test_the_bundled_file_loads_with_its_version() -> None:
    table = load_prices()

    assert table == load_prices(bundled_prices_path())
    assert table.version == "2026-11-28"


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("claude-sonnet-5-5", ("3", "15", "3.75", "6", "0.30")),
        ("claude-sonnet-4-5-20250929", ("3", "15", "3.75", "6", "0.30")),
        ("claude-3-7-sonnet-20250219", ("3", "15", "3.75", "6", "0.30")),
        ("claude-opus-4-5-20251101", ("5", "25", "6.25", "10", "0.50")),
        ("claude-opus-4-1-20250805", ("15", "75", "18.75", "30", "1.50")),
        ("claude-opus-4-20250514", ("15", "75", "18.75", "30", "1.50")),
        ("claude-3-opus-20240229", ("15", "75", "18.75", "30", "1.50")),
        ("claude-haiku-4-5", ("1", "5", "1.25", "2", "0.10")),
        ("claude-3-5-haiku-20241022", ("0.80", "4", "1", "1.6", "0.08")),
        ("claude-3-haiku-20240307", ("0.25", "1.25", "0.30", "0.50", "0.03")),
    ],
)
def test_the_bundled_file_prices_current_models(
    model: str, expected: tuple[str, str, str, str, str]
) -> None:
    price = load_prices().price_of(model)

    assert price is not None
    assert price.rates == Rates(*(Decimal(r) for r in expected))


def test_the_bundled_file_charges_long_sonnet_inputs_at_the_tier_rates() -> None:
    cost = load_prices().cost("claude-sonnet-5-5", Usage(input_tokens=201_000))

    assert cost.usd == Decimal("1.206")  # 201,000 * 6 / 1M
    assert cost.priced


def test_rates_are_read_exactly_from_the_text_written() -> None:
    price = parse_prices(GOOD, BAD).models[0]

    assert str(price.rates.cache_read) == "0.30"
    assert price.rates.cache_write_5m == Decimal("3.75")
    assert price.tiers[0].above_input_tokens == 200_000
    assert str(price.tiers[0].rates.output) == "22.50"


def test_a_file_without_a_version_is_versioned_by_its_digest(tmp_path: Path) -> None:
    text = GOOD.replace('version: "test-7"\n', "")
    path = tmp_path / "prices.yaml"
    path.write_text(text, encoding="utf-8")

    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    assert load_prices(path).version == f"sha256:{digest}"
    assert parse_prices(text, path).version == f"sha256:{digest}"


def test_a_missing_file_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "no-such-prices.yaml"

    with pytest.raises(PriceFileError, match=r"no-such-prices\.yaml"):
        load_prices(path)


def test_an_error_carries_the_file_and_line() -> None:
    with pytest.raises(PriceFileError) as caught:
        parse_prices('version: "v"\nmodels: []\n', BAD)

    assert (caught.value.path, caught.value.line) == (BAD, 2)


HEAD = 'version: "v"\nmodels:\n'


@pytest.mark.parametrize(
    ("text", "line", "says"),
    [
        pytest.param(
            "models:\n  - match: [unclosed\n    input: 1\n", 3, "not valid YAML", id="unparseable"
        ),
        pytest.param("", 1, "empty", id="empty-file"),
        pytest.param("- a\n- b\n", 1, "mapping", id="top-level-a-list"),
        pytest.param('version: "v"\n', 1, "'models'", id="no-models"),
        pytest.param('version: "v"\nmodels: []\n', 2, "non-empty list", id="empty-models"),
        pytest.param('version: "v"\nmodels:\n', 2, "non-empty list", id="null-models"),
        pytest.param(HEAD + "  - claude\n", 3, "mapping", id="entry-a-string"),
        pytest.param('colour: "red"\n' + HEAD + ENTRY, 1, "'colour'", id="unknown-top-key"),
        pytest.param(HEAD + ENTRY + "    discount: 1\n", 9, "'discount'", id="unknown-entry-key"),
        pytest.param(HEAD + ENTRY + "    input: 1\n", 9, "twice", id="duplicate-key"),
        pytest.param(
            HEAD + ENTRY.replace("    cache_read: 0.5\n", ""), 3, "'cache_read'", id="missing-rate"
        ),
        pytest.param(
            HEAD
            + ENTRY.replace('  - match: "m"\n', "  - input: 9\n", 1).replace("    input: 1\n", ""),
            3,
            "'match'",
            id="missing-match",
        ),
        pytest.param(
            HEAD + ENTRY.replace("input: 1", "input: -1"),
            4,
            "rate 'input' must be a non-negative number",
            id="negative-rate",
        ),
        pytest.param(
            HEAD + ENTRY.replace("output: 2", "output: two"), 5, "rate 'output'", id="word-rate"
        ),
        pytest.param(
            HEAD + ENTRY.replace("output: 2", 'output: "2"'), 5, "rate 'output'", id="quoted-rate"
        ),
        pytest.param(
            HEAD + ENTRY.replace("cache_write_5m: 3", "cache_write_5m: true"),
            6,
            "rate 'cache_write_5m'",
            id="bool-rate",
        ),
        pytest.param(
            HEAD + ENTRY.replace("cache_write_1h: 4", "cache_write_1h: .inf"),
            7,
            "rate 'cache_write_1h'",
            id="infinite-rate",
        ),
        pytest.param(
            HEAD + ENTRY.replace("cache_read: 0.5", "cache_read:"),
            8,
            "rate 'cache_read'",
            id="null-rate",
        ),
        pytest.param(
            HEAD + ENTRY.replace('"m"', '"claude-(sonnet"'),
            3,
            "regular expression",
            id="invalid-regex",
        ),
        pytest.param(HEAD + ENTRY.replace('"m"', "42"), 3, "'match'", id="match-a-number"),
        pytest.param("version: 2026-11-26\nmodels:\n" + ENTRY, 1, "'version'", id="version-a-date"),
        pytest.param("version: 3\nmodels:\n" + ENTRY, 1, "'version'", id="version-a-number"),
        pytest.param(HEAD + ENTRY + "    tiers: 5\n", 9, "'tiers'", id="tiers-not-a-list"),
    ],
)
def test_a_bad_file_is_refused_with_its_name_and_line(text: str, line: int, says: str) -> None:
    message = refusal(text)

    assert f"bad-prices.yaml line {line}:" in message
    assert says in message


def tiered(*tiers: str) -> str:
    """A one-model file whose tiers are `tiers` (each an above_input_tokens value)."""
    rates = "".join(f"        {k}: 1\n" for k in ("input", "output", "cache_read"))
    rates += "        cache_write_5m: 1\n        cache_write_1h: 1\n"
    listed = "".join(f"      - above_input_tokens: {t}\n{rates}" for t in tiers)
    return HEAD + ENTRY + "    tiers:\n" + listed


def test_tiers_load_in_ascending_order() -> None:
    price = parse_prices(tiered("1000", "2000"), BAD).models[0]

    assert [t.above_input_tokens for t in price.tiers] == [1000, 2000]


@pytest.mark.parametrize(
    ("tiers", "line", "says"),
    [
        (("2000", "2000"), 16, "must be above the previous tier's 2000"),
        (("2000", "1000"), 16, "must be above the previous tier's 2000"),
        (("0",), 10, "positive whole number"),
        (("-5",), 10, "positive whole number"),
        (("1.5",), 10, "positive whole number"),
        (("lots",), 10, "positive whole number"),
    ],
)
def test_a_bad_tier_is_refused_with_its_line(tiers: tuple[str, ...], line: int, says: str) -> None:
    message = refusal(tiered(*tiers))

    assert f"bad-prices.yaml line {line}:" in message
    assert says in message


def test_a_tier_must_name_every_rate() -> None:
    text = tiered("1000").replace("        cache_write_1h: 1\n", "")

    assert "bad-prices.yaml line 10: a tier has no 'cache_write_1h'" in refusal(text)


def test_an_unknown_key_in_a_tier_is_refused() -> None:
    text = tiered("1000") + "        surcharge: 1\n"

    assert "bad-prices.yaml line 16: unknown key 'surcharge'" in refusal(text)
