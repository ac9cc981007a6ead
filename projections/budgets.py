"""The budgets read model: budgets as set, the alerts they raised, and the alerts'
webhook outbox. Fed from the accounts application's log (where budgets live).

`alert_outbox` is not part of what a rebuild clears: it remembers which alerts were
delivered, so a rebuilt view never sends an alert twice (an alert's id is its
budget's id and version, the same in every rebuild).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import assert_never
from uuid import UUID

from psycopg import Cursor
from psycopg.rows import DictRow
from psycopg.types.json import Jsonb

from domain.accounts import ACCOUNT_EVENT_CLASSES
from domain.budgets import BUDGET_EVENT_CLASSES, Budget, BudgetEvent, BudgetLimits, check_scope
from domain.pricing import usd_text
from domain.values import BudgetScope
from projections.view import Event, View

TABLES = ("budgets", "budget_alerts")
OUTBOX_TABLE = "alert_outbox"


@dataclass(frozen=True)
class AlertRow:
    """A threshold a budget's spend reached, as listed by `GET /budgets/alerts`."""

    alert_id: str
    budget_id: UUID
    scope: str
    scope_id: UUID
    organization_id: UUID | None
    period: str
    threshold: int
    spent_usd: Decimal
    limit_usd: Decimal | None
    spent_tokens: int
    limit_tokens: int | None
    session_id: UUID
    at: datetime


@dataclass(frozen=True)
class BudgetRow:
    scope: BudgetScope
    scope_id: UUID
    limits: BudgetLimits


class BudgetsView(View):
    """Budgets by scope, and their alerts (with a webhook outbox row each)."""

    name = "budgets"
    create_statements = (
        """CREATE TABLE IF NOT EXISTS budgets (
            budget_id uuid PRIMARY KEY,
            scope text NOT NULL,
            scope_id uuid NOT NULL,
            organization_id uuid,
            monthly_usd numeric,
            monthly_tokens bigint,
            thresholds integer[] NOT NULL DEFAULT '{}',
            active boolean NOT NULL DEFAULT false,
            set_version integer NOT NULL DEFAULT 0,
            updated_at timestamptz NOT NULL,
            UNIQUE (scope, scope_id)
        )""",
        """CREATE INDEX IF NOT EXISTS budgets_by_organization ON budgets (organization_id)""",
        """CREATE TABLE IF NOT EXISTS budget_alerts (
            budget_id uuid NOT NULL,
            version integer NOT NULL,
            scope text NOT NULL,
            scope_id uuid NOT NULL,
            organization_id uuid,
            period text NOT NULL,
            threshold integer NOT NULL,
            spent_usd numeric NOT NULL,
            limit_usd numeric,
            spent_tokens bigint NOT NULL,
            limit_tokens bigint,
            session_id uuid NOT NULL,
            at timestamptz NOT NULL,
            PRIMARY KEY (budget_id, version)
        )""",
        f"""CREATE TABLE IF NOT EXISTS {OUTBOX_TABLE} (
            alert_id text PRIMARY KEY,
            payload jsonb NOT NULL,
            created_at timestamptz NOT NULL,
            attempts integer NOT NULL DEFAULT 0,
            next_attempt_at timestamptz NOT NULL,
            delivered_at timestamptz,
            last_error text
        )""",
        f"""CREATE INDEX IF NOT EXISTS alert_outbox_pending
            ON {OUTBOX_TABLE} (next_attempt_at) WHERE delivered_at IS NULL""",
    )
    clear_statements = tuple(f"DELETE FROM {table}" for table in TABLES)

    def apply_event(self, curs: Cursor[DictRow], event: Event) -> None:
        if not isinstance(event, ACCOUNT_EVENT_CLASSES):
            raise TypeError(f"not an account event: {event!r}")
        if isinstance(event, BUDGET_EVENT_CLASSES):  # the rest are the accounts view's
            self._apply(curs, event)

    def _apply(self, curs: Cursor[DictRow], event: BudgetEvent) -> None:
        bid = event.originator_id
        match event:
            case Budget.BudgetCreated(scope=scope, scope_id=scope_id, organization_id=org):
                curs.execute(
                    "INSERT INTO budgets (budget_id, scope, scope_id, organization_id, updated_at) "
                    "VALUES (%s, %s, %s, %s, %s)",
                    (bid, scope, scope_id, org, event.timestamp),
                )
            case Budget.BudgetSet(monthly_usd=usd, monthly_tokens=tokens, thresholds=thresholds):
                curs.execute(
                    "UPDATE budgets SET monthly_usd = %s, monthly_tokens = %s, thresholds = %s, "
                    "active = true, set_version = %s, updated_at = %s WHERE budget_id = %s",
                    (usd, tokens, thresholds, event.originator_version, event.timestamp, bid),
                )
            case Budget.BudgetRemoved():
                curs.execute(
                    "UPDATE budgets SET active = false, set_version = %s, updated_at = %s "
                    "WHERE budget_id = %s",
                    (event.originator_version, event.timestamp, bid),
                )
            case Budget.ThresholdCrossed():
                _alert(curs, event)
            case _:
                assert_never(event)

    # -- queries --------------------------------------------------------------

    def alerts(self, organization_ids: list[UUID], user_id: UUID, limit: int) -> list[AlertRow]:
        """Newest first: alerts of the organizations' budgets, and of the user's own."""
        with self.datastore.get_connection() as conn:
            rows = conn.execute(
                f"SELECT {', '.join(AlertRow.__dataclass_fields__)} FROM ("
                "SELECT budget_id::text || ':' || version AS alert_id, * FROM budget_alerts) a "
                "WHERE organization_id = ANY(%s) OR (scope = 'user' AND scope_id = %s) "
                "ORDER BY at DESC, alert_id LIMIT %s",
                (organization_ids, user_id, limit),
            ).fetchall()
        return [AlertRow(**r) for r in rows]

    def covering(
        self,
        organization_ids: list[UUID],
        team_ids: list[UUID],
        workspace_ids: list[UUID],
        user_id: UUID,
    ) -> list[BudgetRow]:
        """The active budgets on these organizations, teams, workspaces and the user."""
        with self.datastore.get_connection() as conn:
            rows = conn.execute(
                "SELECT scope, scope_id, monthly_usd, monthly_tokens, thresholds FROM budgets "
                "WHERE active AND ((scope = 'org' AND scope_id = ANY(%s)) "
                "OR (scope = 'team' AND scope_id = ANY(%s)) "
                "OR (scope = 'workspace' AND scope_id = ANY(%s)) "
                "OR (scope = 'user' AND scope_id = %s)) ORDER BY scope, scope_id",
                (organization_ids, team_ids, workspace_ids, user_id),
            ).fetchall()
        return [
            BudgetRow(
                check_scope(r["scope"]),
                r["scope_id"],
                BudgetLimits(r["monthly_usd"], r["monthly_tokens"], tuple(r["thresholds"])),
            )
            for r in rows
        ]

    def all_rows(self) -> dict[str, list[dict[str, object]]]:
        with self.datastore.get_connection() as conn:
            return {
                table: list(conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall())
                for table in TABLES
            }


def _alert(curs: Cursor[DictRow], e: Budget.ThresholdCrossed) -> None:
    curs.execute(
        "INSERT INTO budget_alerts SELECT budget_id, %s, scope, scope_id, organization_id, "
        "%s, %s, %s, %s, %s, %s, %s, %s FROM budgets WHERE budget_id = %s",
        (
            e.originator_version,
            e.period,
            e.threshold,
            e.spent_usd,
            e.limit_usd,
            e.spent_tokens,
            e.limit_tokens,
            e.session_id,
            e.timestamp,
            e.originator_id,
        ),
    )
    alert_id = f"{e.originator_id}:{e.originator_version}"
    payload = {
        "type": "budget.threshold_crossed",
        "alert_id": alert_id,
        "budget_id": str(e.originator_id),
        "period": e.period,
        "threshold": e.threshold,
        "spent_usd": usd_text(e.spent_usd),
        "limit_usd": None if e.limit_usd is None else usd_text(e.limit_usd),
        "spent_tokens": e.spent_tokens,
        "limit_tokens": e.limit_tokens,
        "session_id": str(e.session_id),
        "at": e.timestamp.isoformat(),
    }
    # Scope fields come from the budget row, in SQL: the event does not repeat them.
    curs.execute(
        f"INSERT INTO {OUTBOX_TABLE} (alert_id, payload, created_at, next_attempt_at) "
        "SELECT %s, %s::jsonb || jsonb_build_object('scope', scope, 'scope_id', scope_id, "
        "'organization_id', organization_id), %s, %s FROM budgets WHERE budget_id = %s "
        "ON CONFLICT (alert_id) DO NOTHING",
        (alert_id, Jsonb(payload), e.timestamp, e.timestamp, e.originator_id),
    )
