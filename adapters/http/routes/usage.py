"""Usage analytics and the caller's own ids (`/auth/me`); budgets and their alerts are
in `adapters/http/routes/budgets.py`.

A member sees their own usage; an organization's owners and admins see all of it.
Another tenant's workspace, user or budget answers 404, as everywhere else.
`Accept: text/csv` turns a usage report into CSV with the same columns.
"""

from __future__ import annotations

import csv
import io
from datetime import date
from typing import Annotated, TypedDict, cast
from uuid import UUID

import msgspec
from litestar import Controller, Response, get
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import FromPath, FromQuery, QueryParameter

from adapters.commands.usage_params import UsageParamError, day_range, group_keys
from adapters.http.deps import Api, ApiDep, Caller
from adapters.http.errors import invalid
from application.tokens import Principal
from domain.errors import NotFound, SessionNotFound
from domain.pricing import usd_text
from domain.roles import allows
from projections.usage_queries import (
    COLUMNS,
    Figures,
    GroupKey,
    UsageFilter,
    Visibility,
)
from schemas import usage as wire

CSV_TYPE = "text/csv"


class UsageController(Controller):
    path = "/api/v1"
    tags = ["usage"]

    @get(
        "/usage",
        media_type="application/json",
        responses={
            200: ResponseSpec(
                wire.UsageReport,
                description="The report (as CSV with `Accept: text/csv`)",
                generate_examples=False,
            )
        },
    )
    async def usage(
        self,
        request: Caller,
        api: ApiDep,
        group_by: FromQuery[str] = "model",
        start: Annotated[str | None, QueryParameter(name="from")] = None,
        to: FromQuery[str | None] = None,
        workspace_id: FromQuery[UUID | None] = None,
        user_id: FromQuery[UUID | None] = None,
        model: FromQuery[str | None] = None,
    ) -> Response[wire.UsageReport] | Response[str]:
        """Tokens and cost grouped by `group_by` (comma-separated: org, team, workspace,
        user, session, api_key, model, day) over UTC days `from`..`to` (default: this
        month)."""
        try:
            keys, (first, last) = group_keys(group_by), day_range(start, to)
        except UsageParamError as e:
            raise invalid(e.field, str(e)) from None
        who = await _visibility(request.user, api)
        if workspace_id is not None:
            await api.access.workspace(request.user, workspace_id)
        if user_id is not None and user_id != who.user_id:
            theirs = await api.bridge(api.accounts.teams_of, user_id)
            if not any(t.organization_id in who.whole or t.team_id in who.teams for t in theirs):
                raise NotFound(f"user {user_id} not found")
        where = UsageFilter(first, last, workspace_id, user_id, model)
        await api.billing.caught_up("usage")
        groups = await api.bridge(api.billing.usage.usage, who, where, keys)
        items = [_item(g.keys, g.figures) for g in groups]
        totals = sum((g.figures for g in groups), Figures())
        report = wire.UsageReport(
            items=items, totals=_figures(totals), from_=first.isoformat(), to=last.isoformat()
        )
        if CSV_TYPE in request.headers.get("accept", ""):
            return Response(_csv(keys, report), media_type=CSV_TYPE)
        return Response(report)

    @get("/sessions/{session_id:uuid}/usage")
    async def session_usage(
        self,
        session_id: FromPath[UUID],
        request: Caller,
        api: ApiDep,
    ) -> wire.SessionUsage:
        """A session's model calls, by run and one by one."""
        session = await api.access.session(request.user, session_id)
        who = await _visibility(request.user, api)
        if session.owner_id != who.user_id and session.organization_id not in who.whole:
            raise SessionNotFound(session_id)  # a member sees their own usage only
        await api.billing.caught_up("usage")
        calls = await api.bridge(api.billing.usage.session_calls, session_id)
        runs: dict[UUID | None, Figures] = {}
        for c in calls:
            runs[c.run_id] = runs.get(c.run_id, Figures()) + c.figures
        return wire.SessionUsage(
            totals=_figures(sum((c.figures for c in calls), Figures())),
            runs=[wire.RunUsage(run_id=r, **_numbers(f)) for r, f in runs.items()],
            calls=[
                wire.CallUsage(
                    run_id=c.run_id,
                    version=c.version,
                    kind=cast(wire.CallKind, c.kind),
                    model=c.model,
                    at=c.at,
                    price_version=c.price_version,
                    **_numbers(c.figures),
                )
                for c in calls
            ],
        )


async def _visibility(who: Principal, api: Api) -> Visibility:
    """Whole organizations and teams where the caller manages budgets; its own elsewhere."""
    roles = await api.bridge(api.accounts.organization_roles, who)
    teams = await api.bridge(api.accounts.teams_of, who)
    whole = [o for o, role in roles.items() if allows(role, "manage_budgets")]
    managed = [
        t.team_id
        for t in teams
        if t.organization_id not in whole and t.role and allows(t.role, "manage_budgets")
    ]
    belongs = dict.fromkeys([*roles, *(t.organization_id for t in teams)])
    return Visibility(who.user_id, whole, [o for o in belongs if o not in whole], managed)


class FigureFields(TypedDict):
    """`wire.Figures`' fields, to pass to any payload that has them."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: str
    calls: int
    unpriced_calls: int


def _numbers(f: Figures) -> FigureFields:
    return {
        "input_tokens": f.input_tokens, "output_tokens": f.output_tokens,
        "cache_read_tokens": f.cache_read_tokens, "cache_write_tokens": f.cache_write_tokens,
        "cost_usd": usd_text(f.cost_usd), "calls": f.calls, "unpriced_calls": f.unpriced_calls,
    }  # fmt: skip


def _figures(f: Figures) -> wire.Figures:
    return wire.Figures(**_numbers(f))


def _item(keys: dict[str, object], f: Figures) -> wire.UsageItem:
    values = {k: (v.isoformat() if isinstance(v, date) else v) for k, v in keys.items()}
    return msgspec.convert({**values, **_numbers(f)}, wire.UsageItem)


def _csv(keys: list[GroupKey], report: wire.UsageReport) -> str:
    names = [COLUMNS[k][1] for k in keys]
    numbers = list(wire.Figures.__struct_fields__)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([*names, *numbers])
    for item in report.items:
        writer.writerow([getattr(item, n) for n in [*names, *numbers]])
    return out.getvalue()
