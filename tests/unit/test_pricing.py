from __future__ import annotations

from decimal import Decimal

from domain.conversation import CacheTtl, Usage
from domain.pricing import Cost, ModelPrice, PriceTable, Rates, Tier, usd_text


def rates(
    input: str, output: str, cache_write_5m: str, cache_write_1h: str, cache_read: str
) -> Rates:
    return Rates(
        Decimal(input),
        Decimal(output),
        Decimal(cache_write_5m),
        Decimal(cache_write_1h),
        Decimal(cache_read),
    )


SONNET = ModelPrice(
    "claude-sonnet-.*",
    rates("3", "15", "3.75", "6", "0.30"),
    (Tier(200_000, rates("6", "22.50", "7.50", "12", "0.60")),),
)
HAIKU_3 = ModelPrice("claude-3-haiku", rates("0.25", "1.25", "0.30", "0.50", "0.03"))
TABLE = PriceTable("test-1", (SONNET, HAIKU_3))


def test_a_call_costs_each_kind_of_token_at_its_rate_exactly() -> None:
    usage = Usage(
        input_tokens=1_000, output_tokens=500, cache_read_tokens=2_000, cache_write_tokens=300
    )

    cost = TABLE.cost("claude-sonnet-5-5", usage)

    # 0.003 input + 0.0075 output + 0.0006 cache read + 0.001125 cache write (5m)
    assert cost == Cost(Decimal("0.012225"), "test-1", priced=True)


def test_a_one_hour_cache_write_costs_the_one_hour_rate() -> None:
    usage = Usage(
        input_tokens=1_000, output_tokens=500, cache_read_tokens=2_000, cache_write_tokens=300
    )

    cost = TABLE.cost("claude-sonnet-5-5", usage, cache_ttl="1h")

    # 0.003 + 0.0075 + 0.0006 + 300 * 6 / 1M = 0.0018
    assert cost.usd == Decimal("0.0129")


def test_cost_is_exact_and_not_rounded() -> None:
    cost = TABLE.cost("claude-3-haiku", Usage(input_tokens=1))

    assert cost.usd == Decimal("0.00000025")


def test_input_above_the_tier_threshold_is_all_charged_at_tier_rates() -> None:
    cost = TABLE.cost("claude-sonnet-4-5", Usage(input_tokens=201_000, output_tokens=1_000))

    # 201,000 * 6 / 1M = 1.206; 1,000 * 22.50 / 1M = 0.0225
    assert cost.usd == Decimal("1.2285")


def test_input_exactly_at_the_threshold_is_charged_at_base_rates() -> None:
    cost = TABLE.cost("claude-sonnet-4-5", Usage(input_tokens=200_000, output_tokens=1_000))

    # 200,000 * 3 / 1M = 0.6; 1,000 * 15 / 1M = 0.015
    assert cost.usd == Decimal("0.615")


def test_the_tier_is_chosen_by_the_whole_input_including_cache_tokens() -> None:
    usage = Usage(input_tokens=150_000, cache_read_tokens=40_000, cache_write_tokens=20_000)

    cost = TABLE.cost("claude-sonnet-4-5", usage)

    # 210,000 in all, above 200K: 150,000 * 6 + 40,000 * 0.60 + 20,000 * 7.50, per million
    assert cost.usd == Decimal("0.9") + Decimal("0.024") + Decimal("0.15")


def test_rates_for_picks_the_highest_tier_the_input_is_above() -> None:
    low, high = rates("2", "2", "2", "2", "2"), rates("3", "3", "3", "3", "3")
    price = ModelPrice("m", rates("1", "1", "1", "1", "1"), (Tier(10, low), Tier(20, high)))

    assert price.rates_for(10) == price.rates
    assert price.rates_for(11) == low
    assert price.rates_for(20) == low
    assert price.rates_for(21) == high


def test_the_first_matching_price_wins() -> None:
    special = ModelPrice("claude-sonnet-special", rates("1", "1", "1", "1", "1"))
    table = PriceTable("v", (special, SONNET))

    assert table.price_of("claude-sonnet-special") == special
    assert table.price_of("claude-sonnet-4-5") == SONNET


def test_a_pattern_must_match_the_whole_model_name() -> None:
    assert HAIKU_3.matches("claude-3-haiku")
    assert not HAIKU_3.matches("claude-3-haiku-20240307")
    assert not HAIKU_3.matches("x-claude-3-haiku")


def test_a_model_with_no_price_costs_nothing_and_says_it_was_not_priced() -> None:
    cost = TABLE.cost("gpt-4o", Usage(input_tokens=1_000, output_tokens=1_000))

    assert cost == Cost(Decimal(0), "test-1", priced=False)
    assert TABLE.price_of("gpt-4o") is None


def test_worst_case_charges_all_input_at_its_dearest_rate_and_all_max_tokens() -> None:
    # max(3 input, 3.75 cache write 5m) = 3.75: 10,000 * 3.75 + 4,096 * 15, per million
    assert TABLE.worst_case("claude-sonnet-5-5", 10_000, 4_096) == Decimal("0.09894")
    # with a 1-hour cache the dearest input is the 6 of a 1-hour write
    assert TABLE.worst_case("claude-sonnet-5-5", 10_000, 4_096, "1h") == Decimal("0.12144")


def test_worst_case_uses_the_tier_of_the_input_estimate() -> None:
    # 250,000 * 7.50 + 1,000 * 22.50, per million
    assert TABLE.worst_case("claude-sonnet-5-5", 250_000, 1_000) == Decimal("1.8975")


def test_worst_case_of_an_unpriced_model_is_zero() -> None:
    assert TABLE.worst_case("gpt-4o", 10_000, 4_096) == Decimal(0)


def test_worst_case_is_never_below_the_cost_of_a_call_within_its_limits() -> None:
    estimate, max_tokens = 10_000, 4_096
    calls = [
        Usage(input_tokens=estimate, output_tokens=max_tokens),
        Usage(cache_write_tokens=estimate, output_tokens=max_tokens),
        Usage(cache_read_tokens=estimate, output_tokens=max_tokens),
    ]
    ttls: tuple[CacheTtl, ...] = ("5m", "1h")
    for ttl in ttls:
        bound = TABLE.worst_case("claude-sonnet-5-5", estimate, max_tokens, ttl)
        assert all(TABLE.cost("claude-sonnet-5-5", u, ttl).usd <= bound for u in calls)


def test_usd_text_shows_six_places_rounding_half_to_even() -> None:
    assert usd_text(Decimal("0.0000015")) == "0.000002"
    assert usd_text(Decimal("0.0000025")) == "0.000002"
    assert usd_text(Decimal("1.2345675")) == "1.234568"
    assert usd_text(Decimal("0.012225")) == "0.012225"
    assert usd_text(Decimal(3)) == "3.000000"
    assert usd_text(Decimal(0)) == "0.000000"
