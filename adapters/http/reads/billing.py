"""The read models usage and budget requests answer from."""

from __future__ import annotations

from dataclasses import dataclass

from adapters.http.reads.read_your_writes import ViewWaiter
from projections.budgets import BudgetsView
from projections.usage_queries import (
    UsageQueries,
)


@dataclass(frozen=True)
class Billing:
    """The read models usage and budget requests answer from, and how to wait for them."""

    usage: UsageQueries
    budgets: BudgetsView
    waiter: ViewWaiter

    async def caught_up(self, *views: str) -> None:
        """Wait (briefly: `ViewWaiter`'s limit) until each view has what its log held when
        asked, so a caller sees their own writes; then answer with what there is."""
        for view in views:
            await self.waiter.caught_up(view)
