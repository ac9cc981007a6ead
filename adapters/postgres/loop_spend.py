"""The budgets a model call is checked against, read on the event loop.

Before and after every model call the engine reads the budgets covering its scope and
their spend (`BudgetEnforcer`). `LoopSpendReader` sends `UsageQueries`' statement on the
loop's connections (`LoopPool`), the same statement judged by the same code; with no
connection free it reads through the store's threads instead, as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from adapters.postgres.loop_pool import LoopPool
from application.bridge import SyncBridge
from application.loop_writes import StoreBusy
from domain.budgets import BudgetStatus
from domain.values import BudgetScope
from projections.usage_queries import (
    BUDGETS_COVERING,
    UsageQueries,
    covering_of,
    covering_params,
)


class LoopSpendReader:
    """`SpendReader` on the loop's pool, `queries` through `bridge` when it is busy."""

    def __init__(self, pool: LoopPool | None, queries: UsageQueries, bridge: SyncBridge) -> None:
        self.pool, self.queries, self.bridge = pool, queries, bridge

    async def budgets_covering(
        self, scopes: Sequence[tuple[BudgetScope, UUID]], period: str
    ) -> tuple[int, list[BudgetStatus]]:
        if not scopes:
            return 0, []
        if self.pool is not None:
            try:
                async with self.pool.connection() as conn:
                    cursor = await conn.execute(
                        BUDGETS_COVERING, covering_params(scopes, period), prepare=True
                    )
                    return covering_of(await cursor.fetchall())
            except StoreBusy:
                pass
        return await self.bridge(self.queries.budgets_covering, scopes, period)
