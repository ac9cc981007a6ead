"""The budget check's read on the event loop (`LoopSpendReader`) against the same read
through the threads (`UsageQueries`), on one real Postgres: the same position, budgets,
spend and alerts; with the loop's pool busy, the threads answer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from decimal import Decimal

import psycopg
import pytest

from adapters.container import Container
from adapters.postgres.loop_pool import LoopPool
from adapters.postgres.loop_spend import LoopSpendReader
from adapters.services import Services
from application.budget_guard import period_of
from domain.budgets import BillingScope, BudgetLimits

pytestmark = pytest.mark.integration

PASSWORD = "correct horse battery"


@pytest.fixture
async def pool(database_url: str) -> AsyncIterator[LoopPool]:
    pool = LoopPool(database_url, size=1, timeout=0.2, name="test-loop-spend")
    yield pool
    await pool.close()


async def budgeted(container: Container, database_url: str) -> tuple[BillingScope, str]:
    """A user with budgets on their organization and themselves, spend on both."""
    c = container
    me = await c.bridge(c.accounts.register, "payer@example.org", PASSWORD, "P")
    for scope, scope_id in (("org", me.organization_id), ("user", me.user_id)):
        limits = BudgetLimits.of(Decimal("10"), 50_000, (50, 80))
        await c.bridge(c.accounts.set_budget, me.user_id, scope, scope_id, limits)
    head = c.accounts.recorder.max_notification_id() or 0
    assert await c.bridge(c.views.budgets.wait_for, head, 30.0)
    period = period_of(datetime.now(UTC))
    with psycopg.connect(database_url, autocommit=True) as conn:  # as the usage view writes it
        conn.execute(
            "INSERT INTO usage_monthly (scope, scope_id, period, cost_usd, tokens) "
            "VALUES ('org', %s, %s, 6.5, 41000), ('user', %s, %s, 1.25, 3000)",
            (me.organization_id, period, me.user_id, period),
        )
    return BillingScope(me.organization_id, me.team_id, me.workspace_id, me.user_id), period


async def test_the_loop_reads_what_the_threads_read_and_a_busy_pool_reads_through_them(
    container: Container, services: Services, database_url: str, pool: LoopPool
) -> None:
    scope, period = await budgeted(container, database_url)
    threads = container.bridge
    on_loop = LoopSpendReader(pool, container.usage, threads)
    expected = container.usage.budgets_covering(scope.scopes(), period)
    assert sorted((b.scope, b.spent.usd) for b in expected[1]) == [
        ("org", Decimal("6.5")),
        ("user", Decimal("1.25")),
    ]
    assert await on_loop.budgets_covering(scope.scopes(), period) == expected
    async with pool.connection():  # the loop's only connection, held
        assert await on_loop.budgets_covering(scope.scopes(), period) == expected
    assert await on_loop.budgets_covering((), period) == (0, [])
