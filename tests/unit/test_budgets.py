"""Budgets: limits checked from plain input, thresholds recorded once per month."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from uuid import uuid4

import pytest
from argon2 import PasswordHasher

from adapters.bootstrap.in_memory import in_memory_accounts
from adapters.bootstrap.parts import load_price_table
from adapters.config.settings import Settings
from domain.account_errors import BudgetNotFound, Forbidden
from domain.budgets import Budget, BudgetLimits, Spend
from domain.errors import InvalidCommand


@pytest.mark.parametrize(
    ("usd", "tokens", "thresholds", "problem"),
    [
        (None, None, [50], "needs monthly_usd, monthly_tokens or both"),
        (-1, None, [50], "from 0 to"),
        ("1e13", None, [50], "from 0 to"),
        ("ten", None, [50], "must be a number"),
        ("NaN", None, [50], "from 0 to"),
        (None, 10**16, [50], "monthly_tokens"),
        (True, None, [50], "must be a number"),
        (None, -5, [50], "monthly_tokens"),
        (None, 1.5, [50], "monthly_tokens"),
        (10, None, [0], "1 to 1000"),
        (10, None, [1001], "1 to 1000"),
        (10, None, ["50"], "1 to 1000"),
        (10, None, "50", "a list"),
    ],
)
def test_bad_limits_are_refused_with_the_reason(
    usd: object, tokens: object, thresholds: object, problem: str
) -> None:
    with pytest.raises(InvalidCommand, match=problem):
        BudgetLimits.of(usd, tokens, thresholds)


def test_limits_are_exact_and_thresholds_sorted_once_each() -> None:
    limits = BudgetLimits.of("10.50", 1000, [100, 50, 80, 50])
    assert limits.monthly_usd == Decimal("10.50") and limits.thresholds == (50, 80, 100)
    assert not limits.exceeded_by(Spend(Decimal("10.50"), 1000))
    assert limits.exceeded_by(Spend(Decimal("10.500001"), 0))
    assert limits.exceeded_by(Spend(Decimal(0), 1001))
    assert limits.reached(Spend(Decimal("8.40"), 0)) == [50, 80]  # 80% of the money
    assert limits.reached(Spend(Decimal(0), 500)) == [50]  # 50% of the tokens
    assert limits.reached(Spend()) == []


def test_each_threshold_is_recorded_once_a_month_and_again_under_new_limits() -> None:
    budget = Budget.create("org", uuid4(), uuid4())
    budget.set(BudgetLimits.of(10, None, [50, 80, 100]), uuid4())
    session = uuid4()
    first = budget.record_crossings("2026-11", Spend(Decimal(6), 0), session)
    assert [c.threshold for c in first] == [50]
    again = budget.record_crossings("2026-11", Spend(Decimal(9), 0), session)
    assert [c.threshold for c in again] == [80]
    assert budget.record_crossings("2026-11", Spend(Decimal(9), 0), session) == []
    assert [
        c.threshold for c in budget.record_crossings("2026-12", Spend(Decimal(6), 0), session)
    ] == [50]  # noqa: E501
    crossed = [e for e in budget.collect_events() if isinstance(e, Budget.ThresholdCrossed)]
    assert [(e.period, e.threshold) for e in crossed] == [
        ("2026-11", 50), ("2026-11", 80), ("2026-12", 50),
    ]  # fmt: skip
    budget.set(BudgetLimits.of(20, None, [50, 80, 100]), uuid4())
    assert [
        c.threshold for c in budget.record_crossings("2026-12", Spend(Decimal(11), 0), session)
    ] == [50]  # noqa: E501
    budget.remove(uuid4())
    assert budget.record_crossings("2026-12", Spend(Decimal(99), 0), session) == []


def test_a_price_file_that_does_not_load_stops_the_start_naming_file_and_line(
    tmp_path: Path,
) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text('version: "x"\nmodels:\n  - match: "claude-.*"\n    input: -3\n')
    with pytest.raises(SystemExit, match=r"TOKENDANCE_PRICES: .*prices.yaml line 4"):
        load_price_table(Settings(prices=prices))
    prices.write_text("version: x\nmodels: []\n")
    with pytest.raises(SystemExit, match=r"prices\.yaml"):
        load_price_table(Settings(prices=prices))


def test_a_webhook_needs_its_secret() -> None:
    with pytest.raises(SystemExit, match="TOKENDANCE_ALERT_WEBHOOK_SECRET"):
        Settings.from_env({"TOKENDANCE_ALERT_WEBHOOK": "http://127.0.0.1:9/alerts"})
    s = Settings.from_env({"TOKENDANCE_ALERT_WEBHOOK": "http://h/a",
                           "TOKENDANCE_ALERT_WEBHOOK_SECRET": "s" * 16})  # fmt: skip
    assert s.alert_webhook == "http://h/a"
    with pytest.raises(SystemExit, match="5m or 1h"):
        Settings.from_env({"TOKENDANCE_CACHE_TTL": "2h"})


def test_who_may_set_which_budget() -> None:
    accounts = in_memory_accounts(jwt_secret="s" * 32, hasher=PasswordHasher(time_cost=1))
    owner = accounts.register("owner@example.org", "correct horse battery", "O")
    member = accounts.register("member@example.org", "correct horse battery", "M")
    stranger = accounts.register("stranger@example.org", "correct horse battery", "S")
    accounts.add_member(owner.user_id, owner.organization_id, "member@example.org", "member")
    limits = BudgetLimits.of(10, None)
    for scope, scope_id in (("org", owner.organization_id), ("team", owner.team_id),
                            ("workspace", owner.workspace_id)):  # fmt: skip
        with pytest.raises(Forbidden):
            accounts.set_budget(member.user_id, scope, scope_id, limits)  # type: ignore[arg-type]
        with pytest.raises(BudgetNotFound):
            accounts.set_budget(stranger.user_id, scope, scope_id, limits)  # type: ignore[arg-type]
        accounts.set_budget(owner.user_id, scope, scope_id, limits)  # type: ignore[arg-type]
    accounts.set_budget(member.user_id, "user", member.user_id, limits)  # their own
    accounts.set_budget(owner.user_id, "user", member.user_id, limits)  # a member's, by an owner
    with pytest.raises(Forbidden):  # a fellow member: seen, but not theirs to limit
        accounts.set_budget(member.user_id, "user", owner.user_id, limits)
    with pytest.raises(BudgetNotFound):
        accounts.set_budget(owner.user_id, "user", stranger.user_id, limits)
    accounts.remove_budget(owner.user_id, "org", owner.organization_id)
    with pytest.raises(BudgetNotFound):
        accounts.remove_budget(owner.user_id, "org", owner.organization_id)
