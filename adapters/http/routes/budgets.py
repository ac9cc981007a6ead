"""Monthly budgets (per organization, team, workspace, user or model) and the alerts
their thresholds raised. Setting one takes an owner or admin of what it covers; a
member sees the budgets that cover them. Another tenant's budget answers 404.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, cast
from uuid import UUID

from litestar import Controller, delete, get, put
from litestar.exceptions import ValidationException
from litestar.params import FromPath, JSONBody, QueryParameter
from litestar.status_codes import HTTP_204_NO_CONTENT

from adapters.http.deps import ApiDep, Caller
from adapters.http.errors import invalid
from application.budget_guard import period_of
from domain.budgets import BudgetLimits, check_scope
from domain.errors import InvalidCommand
from domain.pricing import usd_text
from domain.values import BudgetScope
from schemas import usage as wire


class BudgetsController(Controller):
    path = "/api/v1"
    tags = ["usage"]

    @put("/budgets/{budget_scope:str}/{scope_id:uuid}")
    async def set_budget(
        self,
        budget_scope: FromPath[str],
        scope_id: FromPath[UUID],
        data: JSONBody[wire.BudgetBody],
        request: Caller,
        api: ApiDep,
    ) -> wire.BudgetOut:
        """Set a monthly budget (owners and admins for org, team and workspace ones)."""
        try:
            checked = _scope(budget_scope)
            limits = BudgetLimits.of(data.monthly_usd, data.monthly_tokens, data.thresholds)
        except InvalidCommand as e:
            raise ValidationException(str(e)) from None
        await api.bridge(api.accounts.set_budget, request.user, checked, scope_id, limits)
        period = period_of(datetime.now(UTC))
        spent = await api.bridge(api.billing.usage.spend, [(checked, scope_id)], period)
        return _budget(checked, scope_id, limits, period, spent.get(f"{checked}:{scope_id}"))

    @delete("/budgets/{budget_scope:str}/{scope_id:uuid}", status_code=HTTP_204_NO_CONTENT)
    async def remove_budget(
        self,
        budget_scope: FromPath[str],
        scope_id: FromPath[UUID],
        request: Caller,
        api: ApiDep,
    ) -> None:
        """Remove a monthly budget (owners and admins for org, team and workspace ones)."""
        scope = _scope(budget_scope)
        await api.bridge(api.accounts.remove_budget, request.user, scope, scope_id)

    @get("/budgets")
    async def list_budgets(
        self,
        request: Caller,
        api: ApiDep,
    ) -> wire.BudgetList:
        """The budgets that cover the caller, with what was spent against them this month."""
        profile = await api.bridge(api.accounts.profile, request.user)
        period = period_of(datetime.now(UTC))
        await api.billing.caught_up("budgets", "usage")
        rows = await api.bridge(
            api.billing.budgets.covering,
            [o.organization_id for o in profile.organizations],
            [t.team_id for t in profile.teams],
            [w.workspace_id for w in profile.workspaces],
            profile.user_id,
        )
        where = [(r.scope, r.scope_id) for r in rows]
        spent = await api.bridge(api.billing.usage.spend, where, period)
        return wire.BudgetList(
            items=[
                _budget(r.scope, r.scope_id, r.limits, period, spent.get(f"{r.scope}:{r.scope_id}"))
                for r in rows
            ]
        )

    @get("/budgets/alerts")
    async def alerts(
        self,
        request: Caller,
        api: ApiDep,
        limit: Annotated[int, QueryParameter(ge=1, le=1000)] = 100,
    ) -> wire.AlertList:
        """Thresholds crossed, newest first: the caller's organizations' and their own."""
        roles = await api.bridge(api.accounts.organization_roles, request.user)
        await api.billing.caught_up("budgets")
        rows = await api.bridge(
            api.billing.budgets.alerts, list(roles), request.user.user_id, limit
        )
        return wire.AlertList(
            items=[
                wire.AlertOut(
                    alert_id=a.alert_id,
                    scope=cast(wire.Scope, a.scope),
                    scope_id=a.scope_id,
                    period=a.period,
                    threshold=a.threshold,
                    spent_usd=usd_text(a.spent_usd),
                    limit_usd=None if a.limit_usd is None else usd_text(a.limit_usd),
                    spent_tokens=a.spent_tokens,
                    limit_tokens=a.limit_tokens,
                    session_id=a.session_id,
                    at=a.at,
                )
                for a in rows
            ]
        )


def _scope(raw: str) -> BudgetScope:
    try:
        return check_scope(raw)
    except InvalidCommand as e:
        raise invalid("budget_scope", str(e)) from None


def _budget(
    scope: wire.Scope, scope_id: UUID, limits: BudgetLimits, period: str, spent: object
) -> wire.BudgetOut:
    usd = getattr(spent, "usd", None)
    tokens = getattr(spent, "tokens", 0)
    return wire.BudgetOut(
        scope=scope,
        scope_id=scope_id,
        monthly_usd=None if limits.monthly_usd is None else usd_text(limits.monthly_usd),
        monthly_tokens=limits.monthly_tokens,
        thresholds=list(limits.thresholds),
        period=period,
        spent_usd=usd_text(usd) if usd is not None else "0.000000",
        spent_tokens=int(tokens),
    )
