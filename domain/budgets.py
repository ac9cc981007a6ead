"""Spending budgets: a monthly limit on what an organization, team, workspace or user
spends on model calls, with thresholds that raise an alert once each per month.

A budget's id is derived from its scope, so setting one is idempotent and the engine
can find the budgets that cover a session without a lookup. A budget is measured
against the spend of its calendar month (UTC); changing its limits starts its
thresholds afresh, since a percentage of another limit is another alert.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from domain.errors import InvalidCommand
from domain.values import BudgetScope

BUDGET_SCOPES: tuple[BudgetScope, ...] = ("org", "team", "workspace", "user")
DEFAULT_THRESHOLDS = (50, 80, 100)
MAX_THRESHOLD = 1000  # percent: an alert at ten times the limit is the furthest one may ask
MAX_USD = Decimal(10) ** 12  # far above any real budget; keeps amounts sane to store
MAX_TOKENS = 10**15
_BUDGETS = UUID("3b8f5a7e-2c41-4f0a-9d63-8e5b1c7a2f94")


def budget_id(scope: BudgetScope, scope_id: UUID) -> UUID:
    return uuid.uuid5(_BUDGETS, f"{scope}:{scope_id}")


def check_scope(scope: str) -> BudgetScope:
    if scope not in BUDGET_SCOPES:
        raise InvalidCommand(f"budget scope must be one of {', '.join(BUDGET_SCOPES)}")
    return scope


@dataclass(frozen=True)
class Spend:
    """Money and tokens spent (or about to be)."""

    usd: Decimal = Decimal(0)
    tokens: int = 0

    def __add__(self, other: Spend) -> Spend:
        return Spend(self.usd + other.usd, self.tokens + other.tokens)


@dataclass(frozen=True)
class BudgetLimits:
    """A month's limits (at least one) and the alert thresholds, in percent of them."""

    monthly_usd: Decimal | None
    monthly_tokens: int | None
    thresholds: tuple[int, ...] = DEFAULT_THRESHOLDS

    @classmethod
    def of(
        cls, monthly_usd: object, monthly_tokens: object, thresholds: object = DEFAULT_THRESHOLDS
    ) -> BudgetLimits:
        """Checked limits from plain input."""
        usd = None if monthly_usd is None else _usd(monthly_usd)
        tokens = None if monthly_tokens is None else _tokens(monthly_tokens)
        if usd is None and tokens is None:
            raise InvalidCommand("a budget needs monthly_usd, monthly_tokens or both")
        return cls(usd, tokens, _thresholds(thresholds))

    def exceeded_by(self, spent: Spend) -> bool:
        """Whether `spent` goes over a limit."""
        over_usd = self.monthly_usd is not None and spent.usd > self.monthly_usd
        over_tokens = self.monthly_tokens is not None and spent.tokens > self.monthly_tokens
        return over_usd or over_tokens

    def reached(self, spent: Spend) -> list[int]:
        """The thresholds `spent` has reached, by either limit."""
        if spent.usd <= 0 and spent.tokens <= 0:
            return []
        return [t for t in self.thresholds if self._reaches(spent, t)]

    def _reaches(self, spent: Spend, threshold: int) -> bool:
        by_usd = self.monthly_usd is not None and spent.usd * 100 >= self.monthly_usd * threshold
        by_tokens = (
            self.monthly_tokens is not None
            and spent.tokens * 100 >= self.monthly_tokens * threshold
        )
        return by_usd or by_tokens


@dataclass(frozen=True)
class ThresholdCrossing:
    """A budget's spend this month reached one of its thresholds."""

    scope: BudgetScope
    scope_id: UUID
    period: str  # YYYY-MM
    threshold: int
    spent_usd: Decimal
    limit_usd: Decimal | None
    spent_tokens: int
    limit_tokens: int | None


@dataclass(frozen=True)
class BillingScope:
    """Whom a session's spend counts against: every budget of these covers it."""

    organization_id: UUID | None
    team_id: UUID | None
    workspace_id: UUID
    user_id: UUID

    def scopes(self) -> list[tuple[BudgetScope, UUID]]:
        found: list[tuple[BudgetScope, UUID | None]] = [
            ("org", self.organization_id),
            ("team", self.team_id),
            ("workspace", self.workspace_id),
            ("user", self.user_id),
        ]
        return [(scope, scope_id) for scope, scope_id in found if scope_id is not None]


@dataclass(frozen=True)
class BudgetStatus:
    """A budget as the read model has it: its limits and its month's spend so far."""

    scope: BudgetScope
    scope_id: UUID
    limits: BudgetLimits
    spent: Spend
    crossed: tuple[int, ...] = ()  # thresholds already alerted this month

    @property
    def name(self) -> str:
        return f"the {self.scope} budget of {self.scope_id}"


class BudgetExceeded(Exception):
    """A model call would take a budget over its limit, so it is not made."""

    code = "BUDGET_EXCEEDED"

    @classmethod
    def of(cls, budget: BudgetStatus, worst: Spend) -> BudgetExceeded:
        limits, spent = budget.limits, budget.spent
        parts = []
        if limits.monthly_usd is not None:
            parts.append(f"${spent.usd:.6f} of ${limits.monthly_usd} spent this month")
        if limits.monthly_tokens is not None:
            parts.append(f"{spent.tokens} of {limits.monthly_tokens} tokens used this month")
        return cls(
            f"{budget.name} would be exceeded: {'; '.join(parts)}, and the next model call "
            f"may cost up to ${worst.usd:.6f} ({worst.tokens} tokens)"
        )


class Budget(Aggregate):
    """The budget of one scope; removed budgets keep their history and may be set again."""

    class BudgetCreated(Aggregate.Created):
        scope: BudgetScope
        scope_id: UUID
        organization_id: UUID | None  # whose admins manage it (None for a user's own)

    class BudgetSet(Aggregate.Event):
        monthly_usd: Decimal | None
        monthly_tokens: int | None
        thresholds: list[int]
        by: UUID

    class BudgetRemoved(Aggregate.Event):
        by: UUID

    class ThresholdCrossed(Aggregate.Event):
        period: str
        threshold: int
        spent_usd: Decimal
        limit_usd: Decimal | None
        spent_tokens: int
        limit_tokens: int | None
        session_id: UUID  # the session whose call crossed it

    @event(BudgetCreated)
    def __init__(self, scope: BudgetScope, scope_id: UUID, organization_id: UUID | None) -> None:
        self.scope = scope
        self.scope_id = scope_id
        self.organization_id = organization_id
        self.limits: BudgetLimits | None = None  # None: not set, or removed
        # period -> thresholds crossed in it, under the current limits
        self.crossed: dict[str, list[int]] = {}

    @classmethod
    def create(cls, scope: BudgetScope, scope_id: UUID, organization_id: UUID | None) -> Budget:
        return cls._create(
            cls.BudgetCreated,
            id=budget_id(scope, scope_id),
            scope=scope,
            scope_id=scope_id,
            organization_id=organization_id,
        )

    def set(self, limits: BudgetLimits, by: UUID) -> None:
        """Set the limits; setting the same ones again records nothing."""
        if limits != self.limits:
            self._set(limits.monthly_usd, limits.monthly_tokens, list(limits.thresholds), by)

    @event(BudgetSet)
    def _set(
        self,
        monthly_usd: Decimal | None,
        monthly_tokens: int | None,
        thresholds: list[int],
        by: UUID,
    ) -> None:
        self.limits = BudgetLimits(monthly_usd, monthly_tokens, tuple(thresholds))
        self.crossed = {}

    def remove(self, by: UUID) -> None:
        if self.limits is not None:
            self._removed(by)

    @event(BudgetRemoved)
    def _removed(self, by: UUID) -> None:
        self.limits = None
        self.crossed = {}

    def record_crossings(
        self, period: str, spent: Spend, session_id: UUID
    ) -> list[ThresholdCrossing]:
        """Record each threshold `spent` reaches that this month has not seen yet."""
        if self.limits is None:
            return []
        limits, seen = self.limits, self.crossed.get(period, [])
        new = [t for t in limits.reached(spent) if t not in seen]
        for threshold in new:
            self._crossed(
                period, threshold, spent.usd, limits.monthly_usd, spent.tokens,
                limits.monthly_tokens, session_id,
            )  # fmt: skip
        return [
            ThresholdCrossing(
                self.scope,
                self.scope_id,
                period,
                t,
                spent.usd,
                limits.monthly_usd,
                spent.tokens,
                limits.monthly_tokens,
            )
            for t in new
        ]

    @event(ThresholdCrossed)
    def _crossed(
        self,
        period: str,
        threshold: int,
        spent_usd: Decimal,
        limit_usd: Decimal | None,
        spent_tokens: int,
        limit_tokens: int | None,
        session_id: UUID,
    ) -> None:
        self.crossed.setdefault(period, []).append(threshold)


BudgetEvent = (
    Budget.BudgetCreated | Budget.BudgetSet | Budget.BudgetRemoved | Budget.ThresholdCrossed
)
BUDGET_EVENT_CLASSES: tuple[type[BudgetEvent], ...] = BudgetEvent.__args__


def _usd(value: object) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | float | str | Decimal):
        raise InvalidCommand("monthly_usd must be a number")
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        raise InvalidCommand("monthly_usd must be a number") from None
    if not amount.is_finite() or not 0 <= amount <= MAX_USD:
        raise InvalidCommand(f"monthly_usd must be a number from 0 to {MAX_USD:,}")
    return amount


def _tokens(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS:
        raise InvalidCommand(f"monthly_tokens must be a whole number from 0 to {MAX_TOKENS:,}")
    return value


def _thresholds(value: object) -> tuple[int, ...]:
    if not isinstance(value, list | tuple):
        raise InvalidCommand("thresholds must be a list of percentages")
    for t in value:
        if isinstance(t, bool) or not isinstance(t, int) or not 1 <= t <= MAX_THRESHOLD:
            raise InvalidCommand(f"each threshold must be a whole percentage, 1 to {MAX_THRESHOLD}")
    return tuple(sorted(set(value)))
