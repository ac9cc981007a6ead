"""The budgets a model call is checked against, read through the store's threads.

Before and after every model call the engine reads the budgets covering its scope and
their spend (`BudgetEnforcer`): `UsageQueries`' one statement. Sent on the loop's own
connections instead, it cost a `serve` under load more CPU per message, not less
(docs/performance.md, #36), so it goes through the threads like the rest.
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from application.bridge import SyncBridge
from domain.budgets import BudgetStatus
from domain.values import BudgetScope
from projections.usage_queries import UsageQueries


class ThreadSpendReader:
    """`SpendReader`: `queries` through `bridge`."""

    def __init__(self, queries: UsageQueries, bridge: SyncBridge) -> None:
        self.queries, self.bridge = queries, bridge

    async def budgets_covering(
        self, scopes: Sequence[tuple[BudgetScope, UUID]], period: str
    ) -> tuple[int, list[BudgetStatus]]:
        if not scopes:
            return 0, []
        return await self.bridge(self.queries.budgets_covering, scopes, period)
