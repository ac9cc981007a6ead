"""Use cases on budgets: who may set them, and the record of each threshold crossed.

Budgets live in the accounts application, beside the organizations whose owners and
admins set them. A user may set a budget on themself; an owner or admin sets one on
their organization, its teams and workspaces, and its members.
"""

from __future__ import annotations

from uuid import UUID

from application.tenants import Tenants
from domain.account_errors import BudgetNotFound
from domain.accounts import Organization
from domain.budgets import Budget, BudgetLimits, Spend, ThresholdCrossing, budget_id
from domain.errors import Conflict
from domain.roles import Actor, Role, actor_of, capped, require
from domain.values import BudgetScope

RETRIES = 3  # a crossing recorded by a concurrent call is a conflict: load and look again


class Budgets(Tenants):
    """Setting and removing budgets, and recording the thresholds they cross."""

    def set_budget(
        self, actor_id: UUID | Actor, scope: BudgetScope, scope_id: UUID, limits: BudgetLimits
    ) -> Budget:
        organization_id = self._budget_owner(actor_id, scope, scope_id)
        budget = self._get(Budget, budget_id(scope, scope_id))
        if budget is None:
            budget = Budget.create(scope, scope_id, organization_id)
        budget.set(limits, actor_of(actor_id).user_id)
        self._save(budget)
        return budget

    def remove_budget(self, actor_id: UUID | Actor, scope: BudgetScope, scope_id: UUID) -> None:
        self._budget_owner(actor_id, scope, scope_id)
        budget = self._get(Budget, budget_id(scope, scope_id))
        if budget is None or budget.limits is None:
            raise BudgetNotFound(scope, scope_id)
        budget.remove(actor_of(actor_id).user_id)
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

    def _budget_owner(
        self, actor_id: UUID | Actor, scope: BudgetScope, scope_id: UUID
    ) -> UUID | None:
        """The organization whose admins manage a budget on the scope (None: the actor's
        own); NotFound for a scope the actor cannot see, Forbidden if it cannot manage it."""
        actor = actor_of(actor_id)
        if scope == "user" and scope_id == actor.user_id:
            return None
        for organization in self._organizations(actor.user_id):
            role = _role_over(organization, actor, scope, scope_id)
            if role is not None:
                require(role, "manage_budgets", f"setting or removing {scope} budgets")
                return organization.id
        raise BudgetNotFound(scope, scope_id)


def _role_over(
    organization: Organization, actor: Actor, scope: BudgetScope, scope_id: UUID
) -> Role | None:
    """The actor's role over the scope in the organization (None: not there)."""
    user_id = actor.user_id
    role: Role | None
    match scope:
        case "org":
            role = organization.role_of(user_id) if organization.id == scope_id else None
        case "team":
            role = organization.role_in_team(user_id, scope_id)
        case "workspace":
            role = organization.role_in_workspace(user_id, scope_id)
        case "user":
            role = organization.role_of(user_id) if organization.belongs(scope_id) else None
    return None if role is None else capped(role, actor.role_cap)
