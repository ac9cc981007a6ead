"""The budget check before every model call: `BudgetEnforcer.before_call`.

The engine awaits it before each model call, so it adds to every turn's latency. The
read models it reads are loaded directly: the four budgets that cover a session (its
organization, team, workspace and user; active, with a large monthly limit), a
month's spend for each in `usage_monthly` (and eleven earlier months), a few alerts
in `budget_alerts` (one under the budget's current limits, one superseded), and as
noise 10,000 other budgets with a year of monthly spend and three alerts each. The
enforcer is wired as `bootstrap` wires it: `ThreadSpendReader`, `UsageQueries` on a
pool of 8 connections (overflow 8) through a `SyncBridge` of 16 threads; nothing has
been recorded past the view's position (`unprojected=[]`).

Timed, sequentially in one event loop after a warm-up, to show where the time goes:
a `SELECT 1` through the pool (the floor), the bare `UsageQueries.budgets_covering`
(one statement), a no-op hop through the bridge, and the whole `before_call`.
Target: `before_call` under 1 ms median.

    python -m bench.budget_check [--calls 2000] [--noise 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from decimal import Decimal
from uuid import UUID

from eventsourcing.postgres import PostgresDatastore

from adapters.postgres.spend_reader import ThreadSpendReader
from application.bridge import SyncBridge
from application.budget_guard import BudgetEnforcer, period_of
from bench.api_harness import machine
from bench.harness import fresh_servers, median, percentile
from bench.usage_query import datastore
from domain.budgets import BillingScope, Spend, ThresholdCrossing, budget_id
from domain.values import BudgetScope
from projections.budgets import BudgetsView
from projections.usage import UsageView
from projections.usage_queries import UsageQueries

WARMUP = 200  # > 8 connections x 10 uses: every connection on its steady-state plan
POSITION = 123_456  # the usage view's tracked notification id
MONTHS = 12

# The noise: budgets of random scopes (a tenth removed), a year of spend and three
# alerts (one superseded by a later limit) each.
NOISE_BUDGETS = """
INSERT INTO budgets (budget_id, scope, scope_id, organization_id, monthly_usd, thresholds,
                     active, set_version, updated_at)
SELECT gen_random_uuid(), (ARRAY['org', 'team', 'workspace', 'user'])[1 + g %% 4],
       gen_random_uuid(), gen_random_uuid(), 100 + g %% 900, '{50,80,100}', g %% 10 <> 0, 2,
       now()
FROM generate_series(1, %(n)s) AS g
"""
SPEND = """
INSERT INTO usage_monthly (scope, scope_id, period, cost_usd, tokens)
SELECT b.scope, b.scope_id,
       to_char(date_trunc('month', %(now)s::timestamptz AT TIME ZONE 'UTC')
               - make_interval(months => m), 'YYYY-MM'),
       round((m + 1) * 12.345678, 6), (m + 1) * 1234567
FROM budgets b, generate_series(0, %(months)s - 1) AS m
"""
ALERTS = """
INSERT INTO budget_alerts
SELECT b.budget_id, a.version, b.scope, b.scope_id, b.organization_id,
       to_char(date_trunc('month', %(now)s::timestamptz AT TIME ZONE 'UTC')
               - make_interval(months => a.ago), 'YYYY-MM'),
       a.threshold, b.monthly_usd * a.threshold / 100, b.monthly_usd, 0, NULL,
       gen_random_uuid(), %(now)s
FROM budgets b,
     (VALUES (1, 0, 50), (3, 0, 50), (4, 1, 80)) AS a(version, ago, threshold)
"""


class NoCrossings:
    """A threshold recorder that records nothing (`before_call` never records)."""

    def record_crossings(
        self, scope: BudgetScope, scope_id: UUID, period: str, spent: Spend, session_id: UUID
    ) -> list[ThresholdCrossing]:
        return []


def load(store: PostgresDatastore, billing: BillingScope, noise: int, now: datetime) -> None:
    for view in (UsageView(store), BudgetsView(store)):
        view.create_table()
    covering = billing.scopes()
    with store.get_connection() as conn, conn.transaction():
        for scope, scope_id in covering:
            conn.execute(
                "INSERT INTO budgets (budget_id, scope, scope_id, organization_id, monthly_usd, "
                "thresholds, active, set_version, updated_at) "
                "VALUES (%s, %s, %s, %s, 1000000, '{50,80,100}', true, 2, %s)",
                (budget_id(scope, scope_id), scope, scope_id, billing.organization_id, now),
            )
        conn.execute(NOISE_BUDGETS, {"n": noise})
        conn.execute(SPEND, {"now": now, "months": MONTHS})
        conn.execute(ALERTS, {"now": now})
        conn.execute(
            "UPDATE projection_tracking SET notification_id = %s WHERE application_name = 'usage'",
            (POSITION,),
        )
    with store.get_connection() as conn:
        conn.execute("ANALYZE budgets, budget_alerts, usage_monthly, projection_tracking")


async def timed(call: Callable[[], Awaitable[object]], n: int) -> list[float]:
    """Milliseconds per call, one after another, after a warm-up."""
    for _ in range(WARMUP):
        await call()
    took = []
    for _ in range(n):
        started = time.perf_counter()
        await call()
        took.append((time.perf_counter() - started) * 1000)
    return took


async def measure(store: PostgresDatastore, billing: BillingScope, now: datetime, n: int) -> None:
    reader = UsageQueries(store)
    bridge = SyncBridge(16)
    enforcer = BudgetEnforcer(
        ThreadSpendReader(reader, bridge), NoCrossings(), bridge, clock=lambda: now
    )
    scopes, period = billing.scopes(), period_of(now)
    position, budgets = reader.budgets_covering(scopes, period)
    crossed = sum(len(b.crossed) for b in budgets)
    print(f"  covering budgets found: {len(budgets)} (position {position}, {crossed} alerted)")
    worst = Spend(Decimal("0.05"), 10_000)

    def select_one() -> None:
        with store.get_connection() as conn:
            conn.execute("SELECT 1").fetchall()

    def covering() -> None:
        reader.budgets_covering(scopes, period)

    async def sync(fn: Callable[[], object]) -> None:
        fn()

    async def hop() -> None:
        await bridge(lambda: None)

    cases: list[tuple[str, Callable[[], Awaitable[object]]]] = [
        ("SELECT 1 through the pool", lambda: sync(select_one)),
        ("budgets_covering, no bridge", lambda: sync(covering)),
        ("bridge hop, no-op", hop),
        ("before_call", lambda: enforcer.before_call(billing, worst, [])),
    ]
    try:
        print(f"  {'call':<29} {'median ms':>10} {'p99 ms':>8} {'max ms':>8}")
        for name, call in cases:
            took = await timed(call, n)
            print(f"  {name:<29} {median(took):10.3f} {percentile(took, 99):8.3f} {max(took):8.3f}")
        print(f"  target: before_call median under 1 ms ({n} calls each, after {WARMUP} untimed)")
    finally:
        bridge.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--noise", type=int, default=10_000)
    args = parser.parse_args()
    print(f"budget check before a model call; {machine()}")
    billing = BillingScope(uuid.uuid4(), uuid.uuid4(), uuid.uuid4(), uuid.uuid4())
    now = datetime.now(UTC)
    with fresh_servers("budget") as fresh:
        store = datastore(fresh.database_url)
        try:
            started = time.perf_counter()
            load(store, billing, args.noise, now)
            print(
                f"  loaded {args.noise + 4:,} budgets, {(args.noise + 4) * MONTHS:,} monthly "
                f"spends, {(args.noise + 4) * 3:,} alerts in {time.perf_counter() - started:.1f} s"
            )
            asyncio.run(measure(store, billing, now, args.calls))
        finally:
            store.close()


if __name__ == "__main__":
    main()
