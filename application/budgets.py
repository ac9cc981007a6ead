"""Use cases on budgets: who may set them, and the record of each threshold crossed.

Budgets live in the accounts application, beside the organizations whose owners and
admins set them. A user may set a budget on themself; an owner or admin sets one on
their organization, its teams and workspaces, and its members.
"""

from __future__ import annotations

from uuid import UUID

from application.tenants import Tenants
from domain.account_errors import BudgetNotFound, Forbidden
from domain.accounts import MANAGING_ROLES, Organization
from domain.budgets import Budget, BudgetLimits, Spend, ThresholdCrossing, budget_id
from domain.errors import Conflict
from domain.values import BudgetScope

RETRIES = 3  # a crossing recorded by a concurrent call is a conflict: load and look again


class Budgets(Tenants):
    """Setting and removing budgets, and recording the thresholds they cross."""

    def set_budget(
        self, actor_id: UUID, scope: BudgetScope, scope_id: UUID, limits: BudgetLimits
    ) -> Budget:
        organization_id = self._budget_owner(actor_id, scope, scope_id)
        budget = self._get(Budget, budget_id(scope, scope_id))
        if budget is None:
            budget = Budget.create(scope, scope_id, organization_id)
        budget.set(limits, actor_id)
        self._save(budget)
        return budget

    def remove_budget(self, actor_id: UUID, scope: BudgetScope, scope_id: UUID) -> None:
        self._budget_owner(actor_id, scope, scope_id)
        budget = self._get(Budget, budget_id(scope, scope_id))
        if budget is None or budget.limits is None:
            raise BudgetNotFound(scope, scope_id)
        budget.remove(actor_id)
        self._save(budget)

    def record_crossings(
        self, scope: BudgetScope, scope_id: UUID, period: str, spent: Spend, session_id: UUID
    ) -> list[ThresholdCrossing]:
        """Record the thresholds `spent` reached that were not recorded yet this month."""
        for attempt in range(RETRIES):
            budget = self._get(Budget, budget_id(scope, scope_id))
            if budget is None:
                return []
            crossings = budget.record_crossings(period, spent, session_id)
            try:
                self._save(budget)
            except Conflict:
                if attempt == RETRIES - 1:
                    raise
                continue
            return crossings
        return []

    def _budget_owner(self, actor_id: UUID, scope: BudgetScope, scope_id: UUID) -> UUID | None:
        """The organization whose admins manage a budget on the scope (None: the actor's
        own); NotFound for a scope the actor cannot see, Forbidden if it cannot manage it."""
        if scope == "user" and scope_id == actor_id:
            return None
        for organization, role in self._memberships(actor_id):
            if _holds(organization, scope, scope_id):
                if role not in MANAGING_ROLES:
                    raise Forbidden(f"a {role} cannot set or remove {scope} budgets")
                return organization.id
        raise BudgetNotFound(scope, scope_id)


def _holds(organization: Organization, scope: BudgetScope, scope_id: UUID) -> bool:
    match scope:
        case "org":
            return organization.id == scope_id
        case "team":
            return scope_id in organization.teams
        case "workspace":
            return scope_id in organization.workspaces
        case "user":
            return organization.role_of(scope_id) is not None
