"""Budgets, as the engine enforces them: checked before every model call, their
thresholds recorded after it.

The spend a check sees is the usage read model's, plus the calls this run recorded
that the read model has not applied yet (`Unprojected`), so a run never outruns its
own spend. Calls of other runs in flight are not seen: under concurrent runs a budget
can be overspent by at most one call per active run (each call's worst case passed
its check before the others' costs were known).

A check says whether any budget covers the scope. When none did, the engine does not
ask for the thresholds after that call (nothing could be crossed): a budget set up
while the call ran counts its spend from the next call's check on.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Protocol
from uuid import UUID

from application.bridge import SyncBridge
from application.ports import SpendReader, ThresholdRecorder
from domain.budgets import BillingScope, BudgetExceeded, BudgetStatus, Spend, ThresholdCrossing

# (notification id, spend) of each model call a run recorded, oldest first.
Unprojected = Sequence[tuple[int, Spend]]


def period_of(moment: datetime) -> str:
    """The budget month of a moment: YYYY-MM in UTC."""
    return moment.astimezone(UTC).strftime("%Y-%m")


class BudgetGuard(Protocol):
    """What the engine asks of budgets around each model call."""

    async def before_call(
        self, scope: BillingScope, worst: Spend, unprojected: Unprojected
    ) -> bool:
        """Raise `BudgetExceeded` if a call costing up to `worst` could exceed a budget;
        else whether any budget covers `scope` (none: `after_call` need not be asked)."""
        ...

    async def after_call(
        self, scope: BillingScope, session_id: UUID, unprojected: Unprojected
    ) -> list[ThresholdCrossing]:
        """Record the thresholds the spend has reached; the crossings recorded now."""
        ...


class NoBudgets:
    """No budgets at all (an engine on an in-memory store, with no usage read model)."""

    async def before_call(
        self, scope: BillingScope, worst: Spend, unprojected: Unprojected
    ) -> bool:
        return False

    async def after_call(
        self, scope: BillingScope, session_id: UUID, unprojected: Unprojected
    ) -> list[ThresholdCrossing]:
        return []


class BudgetEnforcer:
    """Budgets from the read model; crossings recorded through `recorder`, once each."""

    def __init__(
        self,
        reader: SpendReader,
        recorder: ThresholdRecorder,
        bridge: SyncBridge,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.reader = reader
        self.recorder = recorder
        self.bridge = bridge
        self.clock = clock

    async def before_call(
        self, scope: BillingScope, worst: Spend, unprojected: Unprojected
    ) -> bool:
        budgets = await self._covering(scope, unprojected)
        for budget in budgets:
            if budget.limits.exceeded_by(budget.spent + worst):
                raise BudgetExceeded.of(budget, worst)
        return bool(budgets)

    async def after_call(
        self, scope: BillingScope, session_id: UUID, unprojected: Unprojected
    ) -> list[ThresholdCrossing]:
        crossings: list[ThresholdCrossing] = []
        period = period_of(self.clock())
        for budget in await self._covering(scope, unprojected, period):
            reached = budget.limits.reached(budget.spent)
            if any(t not in budget.crossed for t in reached):
                crossings += await self.bridge(
                    self.recorder.record_crossings,
                    budget.scope,
                    budget.scope_id,
                    period,
                    budget.spent,
                    session_id,
                )
        return crossings

    async def _covering(
        self, scope: BillingScope, unprojected: Unprojected, period: str | None = None
    ) -> list[BudgetStatus]:
        period = period or period_of(self.clock())
        position, budgets = await self.reader.budgets_covering(scope.scopes(), period)
        pending = sum((spend for nid, spend in unprojected if nid > position), Spend())
        return [replace(b, spent=b.spent + pending) for b in budgets]
