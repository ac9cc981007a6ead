"""Wire formats of usage analytics, budgets and the caller's profile (`/api/v1`)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

import msgspec

from schemas.api import WorkspaceOut
from schemas.sse import JsonValue

Scope = Literal["org", "team", "workspace", "user"]
CallKind = Literal["turn", "compaction", "regeneration"]  # regeneration: a slide, by a user
Usd = Annotated[str, msgspec.Meta(pattern=r"^\d+\.\d{6}$", description="USD, six places")]


class Figures(msgspec.Struct, kw_only=True):
    """Tokens by kind, cost and calls, summed over a group."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost_usd: Usd
    calls: int
    unpriced_calls: int  # calls of a model the price table has no price for (cost 0)


class UsageItem(Figures, kw_only=True, omit_defaults=True):
    """One group: the keys asked for in `group_by`, and its figures."""

    org_id: UUID | None = None
    team_id: UUID | None = None
    workspace_id: UUID | None = None
    user_id: UUID | None = None
    session_id: UUID | None = None
    api_key_id: UUID | None = None  # with group_by=api_key: the key (none: a login's)
    model: str | None = None
    day: str | None = None  # YYYY-MM-DD (UTC)


class UsageReport(msgspec.Struct, kw_only=True):
    items: list[UsageItem]
    totals: Figures
    from_: str = msgspec.field(name="from")
    to: str


class RunUsage(Figures, kw_only=True):
    run_id: UUID | None


class CallUsage(Figures, kw_only=True):
    run_id: UUID | None
    version: int
    kind: CallKind
    model: str
    at: datetime
    price_version: str


class SessionUsage(msgspec.Struct, kw_only=True):
    totals: Figures
    runs: list[RunUsage]
    calls: list[CallUsage]


class BudgetBody(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    monthly_usd: float | str | None = None
    monthly_tokens: int | None = None
    thresholds: list[int] = msgspec.field(default_factory=lambda: [50, 80, 100])


class BudgetOut(msgspec.Struct, kw_only=True):
    scope: Scope
    scope_id: UUID
    monthly_usd: Usd | None
    monthly_tokens: int | None
    thresholds: list[int]
    period: str  # YYYY-MM, the month `spent_*` is of
    spent_usd: Usd
    spent_tokens: int


class BudgetList(msgspec.Struct, kw_only=True):
    items: list[BudgetOut]


class AlertOut(msgspec.Struct, kw_only=True):
    alert_id: str
    scope: Scope
    scope_id: UUID
    period: str
    threshold: int
    spent_usd: Usd
    limit_usd: Usd | None
    spent_tokens: int
    limit_tokens: int | None
    session_id: UUID
    at: datetime


class AlertList(msgspec.Struct, kw_only=True):
    items: list[AlertOut]


class OrganizationOut(msgspec.Struct):
    id: UUID
    name: str
    role: str


class TeamOut(msgspec.Struct):
    id: UUID
    name: str
    organization_id: UUID
    role: str | None = None  # the caller's role in the team


class MeOut(msgspec.Struct, kw_only=True):
    id: UUID
    email: str
    name: str
    avatar_url: str | None = None
    preferences: dict[str, JsonValue] = msgspec.field(default_factory=dict)
    organizations: list[OrganizationOut]
    teams: list[TeamOut]
    workspaces: list[WorkspaceOut]
