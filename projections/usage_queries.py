"""Queries on the usage read model: usage grouped any way, a session's calls, and the
spend of each budget this month (what the engine checks before a model call)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from decimal import Decimal
from typing import Literal
from uuid import UUID

from eventsourcing.postgres import PostgresDatastore

from domain.budgets import BudgetLimits, BudgetStatus, Spend
from domain.values import BudgetScope
from projections.pg_arrays import array_of
from projections.view import TRACKING_TABLE

GroupKey = Literal["org", "team", "workspace", "user", "session", "api_key", "model", "day"]
GROUP_KEYS: tuple[GroupKey, ...] = (
    "org", "team", "workspace", "user", "session", "api_key", "model", "day"
)  # fmt: skip
# group key -> (column, the name the API gives it)
COLUMNS: dict[GroupKey, tuple[str, str]] = {
    "org": ("organization_id", "org_id"),
    "team": ("team_id", "team_id"),
    "workspace": ("workspace_id", "workspace_id"),
    "user": ("user_id", "user_id"),
    "session": ("session_id", "session_id"),
    "api_key": ("api_key_id", "api_key_id"),  # the key a run's message came with (or none)
    "model": ("model", "model"),
    "day": ("day", "day"),
}
TOKEN_COLUMNS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


@dataclass(frozen=True)
class Figures:
    """Tokens, cost and calls, summed."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cost_usd: Decimal = Decimal(0)
    calls: int = 0
    unpriced_calls: int = 0  # calls of a model the price table had no price for

    def __add__(self, other: Figures) -> Figures:
        return Figures(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.cost_usd + other.cost_usd,
            self.calls + other.calls,
            self.unpriced_calls + other.unpriced_calls,
        )


@dataclass(frozen=True)
class UsageGroup:
    keys: dict[str, object]  # API key name -> value (uuid, model name or day)
    figures: Figures


@dataclass(frozen=True)
class Visibility:
    """Whose usage a caller sees: whole organizations and whole teams (where it is an
    owner or admin), and its own in the others."""

    user_id: UUID
    whole: list[UUID] = field(default_factory=list)
    own_only: list[UUID] = field(default_factory=list)
    teams: list[UUID] = field(default_factory=list)
    everyone: bool = False  # an operator's view: every organization

    @classmethod
    def operator(cls) -> Visibility:
        return cls(UUID(int=0), everyone=True)


@dataclass(frozen=True)
class UsageFilter:
    start: date
    end: date  # inclusive
    workspace_id: UUID | None = None
    user_id: UUID | None = None
    model: str | None = None


@dataclass(frozen=True)
class CallRow:
    session_id: UUID
    version: int
    run_id: UUID | None
    kind: str
    model: str
    at: datetime
    figures: Figures
    price_version: str


class UsageQueries:
    """Reads of the usage (and budgets) read models."""

    def __init__(self, datastore: PostgresDatastore) -> None:
        self.datastore = datastore

    def usage(
        self, who: Visibility, where: UsageFilter, group_by: Sequence[GroupKey]
    ) -> list[UsageGroup]:
        """Figures per group, ordered by the group keys."""
        table = _table_for(who, where, group_by)
        calls, unpriced = ("count(*)", "count(*) FILTER (WHERE NOT priced)") if (
            table == "usage_calls"
        ) else ("sum(calls)", "sum(unpriced_calls)")  # fmt: skip
        keys = [COLUMNS[k][0] for k in group_by]
        conditions = ["day BETWEEN %(start)s AND %(end)s"]
        if table == "usage_org_daily" and not who.everyone:
            conditions.append("organization_id = ANY(%(whole)s)")
        elif not who.everyone:
            conditions.append(
                "(organization_id = ANY(%(whole)s) OR team_id = ANY(%(teams)s) OR "
                "(organization_id = ANY(%(own)s) AND user_id = %(me)s))"
            )
        for name, value in (("workspace_id", where.workspace_id), ("user_id", where.user_id),
                            ("model", where.model)):  # fmt: skip
            if value is not None:
                conditions.append(f"{name} = %({name})s")
        select = ", ".join([*keys, *(f"sum({c})::bigint AS {c}" for c in TOKEN_COLUMNS)])
        sql = (
            f"SELECT {select}, sum(cost_usd) AS cost_usd, {calls}::bigint AS calls, "
            f"{unpriced}::bigint AS unpriced_calls FROM {table} "
            f"WHERE {' AND '.join(conditions)}"
        )
        if keys:
            sql += f" GROUP BY {', '.join(keys)} ORDER BY {', '.join(keys)}"
        params = {
            "whole": who.whole, "own": who.own_only, "teams": who.teams, "me": who.user_id,
            "start": where.start,
            "end": where.end, "workspace_id": where.workspace_id, "user_id": where.user_id,
            "model": where.model,
        }  # fmt: skip
        # Not prepared: a generic plan of a prepared statement guesses row counts for
        # any organization and dates, and sorts on disk where this one would not.
        with self.datastore.get_connection() as conn:
            rows = conn.execute(sql, params, prepare=False).fetchall()
        return [
            UsageGroup({COLUMNS[k][1]: r[COLUMNS[k][0]] for k in group_by}, _figures(r))
            for r in rows
            if r["calls"]
        ]

    def session_calls(self, session_id: UUID) -> list[CallRow]:
        """A session's model calls, oldest first."""
        with self.datastore.get_connection() as conn:
            rows = conn.execute(
                "SELECT *, 1 AS calls, (NOT priced)::int AS unpriced_calls FROM usage_calls "
                "WHERE session_id = %s ORDER BY version",
                (session_id,),
            ).fetchall()
        return [
            CallRow(r["session_id"], r["version"], r["run_id"], r["kind"], r["model"], r["at"],
                    _figures(r), r["price_version"])
            for r in rows
        ]  # fmt: skip

    def budgets_covering(
        self, scopes: Sequence[tuple[BudgetScope, UUID]], period: str
    ) -> tuple[int, list[BudgetStatus]]:
        """The usage view's position, and the active budgets on `scopes` with their spend
        in `period` and the thresholds already alerted under their current limits."""
        if not scopes:
            return 0, []
        with self.datastore.get_connection() as conn:
            rows = conn.execute(
                _BUDGETS_COVERING, {"period": period, "kinds": _kinds(scopes), "ids": _ids(scopes)}
            ).fetchall()
        position = rows[0]["position"]
        assert position is None or isinstance(position, int)
        return position or 0, [_status(r) for r in rows if r["scope"] is not None]

    def spend(self, scopes: Sequence[tuple[BudgetScope, UUID]], period: str) -> dict[str, Spend]:
        """The spend of each scope in `period`, keyed `scope:scope_id`."""
        with self.datastore.get_connection() as conn:
            rows = conn.execute(
                "SELECT scope, scope_id, cost_usd, tokens FROM usage_monthly WHERE period = %s "
                "AND (scope, scope_id) IN (SELECT * FROM unnest(%s::text[], %s::uuid[]))",
                (period, _kinds(scopes), _ids(scopes)),
            ).fetchall()
        return {f"{r['scope']}:{r['scope_id']}": Spend(r["cost_usd"], r["tokens"]) for r in rows}


ORG_KEYS = frozenset({"org", "model", "day"})

# The position and the spend in one statement, so that they are of one snapshot; it
# always answers one row (the position) even with no budget to join.
_BUDGETS_COVERING = (
    f"WITH position AS (SELECT notification_id FROM {TRACKING_TABLE} "
    "WHERE application_name = 'usage') "
    "SELECT p.notification_id AS position, b.scope, b.scope_id, b.monthly_usd, "
    "b.monthly_tokens, b.thresholds, coalesce(m.cost_usd, 0) AS spent_usd, "
    "coalesce(m.tokens, 0) AS spent_tokens, ARRAY(SELECT a.threshold FROM "
    "budget_alerts a WHERE a.budget_id = b.budget_id AND a.period = %(period)s "
    "AND a.version > b.set_version) AS crossed "
    "FROM (SELECT 1) one LEFT JOIN position p ON true "
    "LEFT JOIN budgets b ON b.active AND (b.scope, b.scope_id) IN "
    "(SELECT * FROM unnest(%(kinds)s::text[], %(ids)s::uuid[])) "
    "LEFT JOIN usage_monthly m ON m.scope = b.scope AND m.scope_id = b.scope_id "
    "AND m.period = %(period)s"
)


def _kinds(scopes: Sequence[tuple[BudgetScope, UUID]]) -> list[str]:
    return array_of("text")(s for s, _ in scopes)


def _ids(scopes: Sequence[tuple[BudgetScope, UUID]]) -> list[UUID]:
    return array_of("uuid")(i for _, i in scopes)


def _table_for(who: Visibility, where: UsageFilter, group_by: Sequence[GroupKey]) -> str:
    """The smallest table that answers: calls (by session), the rollup by organization,
    model and day (whole organizations, no workspace or user asked for), or the daily
    rollup by team, workspace, user and model."""
    if "session" in group_by or "api_key" in group_by:
        return "usage_calls"
    whole_only = who.everyone or not (who.own_only or who.teams)
    if set(group_by) <= ORG_KEYS and whole_only and not (where.workspace_id or where.user_id):
        return "usage_org_daily"
    return "usage_daily"


def _figures(r: dict[str, object]) -> Figures:
    def number(name: str) -> int:
        value = r[name]
        return int(value) if isinstance(value, int | Decimal) else 0

    cost = r["cost_usd"]
    return Figures(
        number("input_tokens"),
        number("output_tokens"),
        number("cache_read_tokens"),
        number("cache_write_tokens"),
        cost if isinstance(cost, Decimal) else Decimal(0),
        number("calls"),
        number("unpriced_calls"),
    )


def _status(r: dict[str, object]) -> BudgetStatus:
    usd, tokens, thresholds = r["monthly_usd"], r["monthly_tokens"], r["thresholds"]
    spent_usd, spent_tokens, crossed = r["spent_usd"], r["spent_tokens"], r["crossed"]
    assert isinstance(thresholds, list) and isinstance(crossed, list)
    assert isinstance(spent_usd, Decimal) and isinstance(spent_tokens, int)
    limits = BudgetLimits(
        usd if isinstance(usd, Decimal) else None,
        tokens if isinstance(tokens, int) else None,
        tuple(thresholds),
    )
    scope, scope_id = r["scope"], r["scope_id"]
    assert scope in ("org", "team", "workspace", "user") and isinstance(scope_id, UUID)
    return BudgetStatus(scope, scope_id, limits, Spend(spent_usd, spent_tokens), tuple(crossed))
