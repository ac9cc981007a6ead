"""The usage read model: one row per model call, with a daily rollup and a monthly
spend per budget scope kept in the same transaction.

Every model call the engine records counts: assistant turns and the calls that wrote
compaction summaries. Costs are the ones recorded on the events (by the price table
of their time), so a rebuild gives the same figures to the last digit. A forked
session's copy of its parent's calls is not counted again.
"""

from __future__ import annotations

from datetime import UTC
from typing import assert_never
from uuid import UUID

from psycopg import Cursor
from psycopg.rows import DictRow

from domain.events import SessionEvent
from domain.session import AgentSession as S
from projections.view import SessionView

# Stands for an organization or team a session started before sessions named them,
# and whose workspace the accounts read model does not know.
UNKNOWN = UUID(int=0)
TABLES = ("usage_sessions", "usage_calls", "usage_daily", "usage_org_daily", "usage_monthly")
NUMBERS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "cost_usd")
_ADD = ", ".join(f"{c} = {{t}}.{c} + excluded.{c}" for c in (*NUMBERS, "calls", "unpriced_calls"))


# rollup table -> its key columns besides the day and the model
ROLLUPS = {
    "usage_daily": ("organization_id", "team_id", "workspace_id", "user_id"),
    "usage_org_daily": ("organization_id",),
}


def _rollup_table(table: str) -> str:
    """A rollup's table: its keys, the day and the model, then the summed figures."""
    first, *rest = ROLLUPS[table]
    keys = "".join(f"{k} uuid NOT NULL, " for k in ROLLUPS[table])
    key = ", ".join([first, "day", *rest, "model"])
    return (
        f"CREATE TABLE IF NOT EXISTS {table} ({keys}model text NOT NULL, day date NOT NULL, "
        "input_tokens bigint NOT NULL, output_tokens bigint NOT NULL, "
        "cache_read_tokens bigint NOT NULL, cache_write_tokens bigint NOT NULL, "
        "cost_usd numeric NOT NULL, calls bigint NOT NULL, unpriced_calls bigint NOT NULL, "
        f"PRIMARY KEY ({key}))"
    )


class UsageView(SessionView):
    """Model calls by organization, team, workspace, user, session, model and day."""

    name = "usage"
    create_statements = (
        """CREATE TABLE IF NOT EXISTS usage_sessions (
            session_id uuid PRIMARY KEY,
            organization_id uuid NOT NULL,
            team_id uuid NOT NULL,
            workspace_id uuid NOT NULL,
            user_id uuid NOT NULL,
            copied_through integer NOT NULL,
            run_id uuid
        )""",
        """CREATE TABLE IF NOT EXISTS usage_calls (
            session_id uuid NOT NULL,
            version integer NOT NULL,
            run_id uuid,
            kind text NOT NULL,
            organization_id uuid NOT NULL,
            team_id uuid NOT NULL,
            workspace_id uuid NOT NULL,
            user_id uuid NOT NULL,
            model text NOT NULL,
            at timestamptz NOT NULL,
            day date NOT NULL,
            input_tokens bigint NOT NULL,
            output_tokens bigint NOT NULL,
            cache_read_tokens bigint NOT NULL,
            cache_write_tokens bigint NOT NULL,
            cost_usd numeric NOT NULL,
            price_version text NOT NULL,
            priced boolean NOT NULL,
            PRIMARY KEY (session_id, version)
        )""",
        "CREATE INDEX IF NOT EXISTS usage_calls_by_org ON usage_calls (organization_id, day)",
        _rollup_table("usage_daily"),
        "CREATE INDEX IF NOT EXISTS usage_daily_by_user ON usage_daily (user_id, day)",
        # What an organization's dashboard reads: a few rows per day, whatever its size.
        _rollup_table("usage_org_daily"),
        # Added with API keys: tables made before get the column here.
        "ALTER TABLE usage_sessions ADD COLUMN IF NOT EXISTS api_key_id uuid",
        "ALTER TABLE usage_calls ADD COLUMN IF NOT EXISTS api_key_id uuid",
        """CREATE TABLE IF NOT EXISTS usage_monthly (
            scope text NOT NULL,
            scope_id uuid NOT NULL,
            period text NOT NULL,
            cost_usd numeric NOT NULL,
            tokens bigint NOT NULL,
            PRIMARY KEY (scope, scope_id, period)
        )""",
    )
    clear_statements = tuple(f"DELETE FROM {table}" for table in TABLES)

    def apply_session_event(self, curs: Cursor[DictRow], event: SessionEvent) -> None:
        e, sid = event, event.originator_id
        match e:
            case S.SessionStarted():
                _session(curs, e)
            case S.RunRequested(run_id=run_id, api_key_id=api_key_id):
                curs.execute(
                    "UPDATE usage_sessions SET run_id = %s, api_key_id = %s WHERE session_id = %s",
                    (run_id, api_key_id, sid),
                )
            case S.AssistantTurnRecorded(run_id=run_id):
                _call(curs, e, "turn", run_id)
            case S.ContextCompacted(model=model):
                if model:  # a summary recorded before the call that wrote it was
                    _call(curs, e, "compaction", None)
            case S.SlideRewritten(model=model):
                if model:  # a slide regenerated by a model call (not a tool's rewrite)
                    _call(curs, e, "regeneration", None)
            case (
                S.UserMessageAppended() | S.ToolCallRequested() | S.ToolResultRecorded()
                | S.ConfirmationRequested() | S.ConfirmationGiven() | S.PlanUpdated()
                | S.FindingRecorded() | S.ProgressNoted() | S.StrikeRecorded()
                | S.RebootRequested() | S.BudgetThresholdReached() | S.SourceRecorded()
                | S.SkillActivated() | S.MemoriesRecalled()
                | S.ArtifactCreated() | S.DeckCreated() | S.SlideAdded() | S.SlideRemoved()
                | S.SlidesReordered() | S.TemplateChanged()
                | S.RunStarted() | S.RunCompleted() | S.RunFailed() | S.RunStopped()
                | S.SessionRenamed() | S.SessionCompleted() | S.SessionArchived()
                | S.ModelFallbackUsed() | S.McpToolsetChanged()
            ):  # fmt: skip
                pass  # no model call
            case _:
                assert_never(e)

    def all_rows(self) -> dict[str, list[dict[str, object]]]:
        """Every table's rows, ordered (for comparing a rebuilt view with the live one)."""
        with self.datastore.get_connection() as conn:
            return {
                table: list(conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2, 3, 4").fetchall())
                for table in TABLES
            }


def _session(curs: Cursor[DictRow], e: S.SessionStarted) -> None:
    organization_id, team_id = e.organization_id, e.team_id
    if organization_id is None or team_id is None:
        organization_id, team_id = _tenancy_of(curs, e.workspace_id)
    curs.execute(
        "INSERT INTO usage_sessions VALUES (%s, %s, %s, %s, %s, %s, NULL)",
        (e.originator_id, organization_id, team_id, e.workspace_id, e.owner_id,
         e.parent_version or 0),
    )  # fmt: skip


def _tenancy_of(curs: Cursor[DictRow], workspace_id: UUID) -> tuple[UUID, UUID]:
    """A workspace's organization and team, from the accounts read model if it has it."""
    curs.execute("SELECT to_regclass('accounts_workspaces') IS NOT NULL AS known")
    row = curs.fetchone()
    if row and row["known"]:
        curs.execute(
            "SELECT organization_id, team_id FROM accounts_workspaces WHERE workspace_id = %s",
            (workspace_id,),
        )
        found = curs.fetchone()
        if found:
            return found["organization_id"], found["team_id"]
    return UNKNOWN, UNKNOWN


def _call(
    curs: Cursor[DictRow],
    e: S.AssistantTurnRecorded | S.ContextCompacted | S.SlideRewritten,
    kind: str,
    run_id: UUID | None,
) -> None:
    """One model call: its row, its day's rollup, and its month in each budget scope."""
    at = e.timestamp.astimezone(UTC)
    numbers = (e.input_tokens, e.output_tokens, e.cache_read_tokens, e.cache_write_tokens)
    key = {"sid": e.originator_id, "version": e.originator_version}
    # Nothing is written for a call a fork copied from its parent (`copied_through`).
    curs.execute(
        "INSERT INTO usage_calls SELECT %(sid)s, %(version)s, "
        "CASE WHEN %(kind)s = 'regeneration' THEN NULL ELSE coalesce(%(run)s, run_id) END, "
        "%(kind)s, organization_id, team_id, workspace_id, user_id, %(model)s, %(at)s, "
        "%(day)s, %(i)s, %(o)s, %(cr)s, %(cw)s, %(cost)s, %(pv)s, %(priced)s, "
        "CASE WHEN %(kind)s = 'regeneration' THEN NULL ELSE api_key_id END "
        "FROM usage_sessions WHERE session_id = %(sid)s AND copied_through < %(version)s",
        {**key, "run": run_id, "kind": kind, "model": e.model, "at": at, "day": at.date(),
         "i": numbers[0], "o": numbers[1], "cr": numbers[2], "cw": numbers[3],
         "cost": e.cost_usd, "pv": e.price_version, "priced": e.priced},
    )  # fmt: skip
    figures = {**key, "model": e.model, "day": at.date(), "i": numbers[0], "o": numbers[1],
               "cr": numbers[2], "cw": numbers[3], "cost": e.cost_usd,
               "unpriced": int(not e.priced)}  # fmt: skip
    for table, keys in ROLLUPS.items():
        _add_to_rollup(curs, table, keys, figures)
    curs.execute(
        "INSERT INTO usage_monthly SELECT x.scope, x.scope_id, %(period)s, %(cost)s, %(tokens)s "
        "FROM usage_sessions s, LATERAL (VALUES ('org', s.organization_id), "
        "('team', s.team_id), ('workspace', s.workspace_id), ('user', s.user_id)) "
        "AS x(scope, scope_id) WHERE s.session_id = %(sid)s AND s.copied_through < %(version)s "
        "ON CONFLICT (scope, scope_id, period) DO UPDATE SET "
        "cost_usd = usage_monthly.cost_usd + excluded.cost_usd, "
        "tokens = usage_monthly.tokens + excluded.tokens",
        {**key, "period": at.strftime("%Y-%m"), "cost": e.cost_usd, "tokens": sum(numbers)},
    )


def _add_to_rollup(
    curs: Cursor[DictRow], table: str, keys: tuple[str, ...], figures: dict[str, object]
) -> None:
    """Add one call's figures to its row of a rollup (made on the first call)."""
    columns = ", ".join(keys)
    curs.execute(
        f"INSERT INTO {table} ({columns}, day, model, input_tokens, output_tokens, "
        "cache_read_tokens, cache_write_tokens, cost_usd, calls, unpriced_calls) "
        f"SELECT {columns}, %(day)s, %(model)s, %(i)s, %(o)s, %(cr)s, %(cw)s, %(cost)s, 1, "
        "%(unpriced)s FROM usage_sessions "
        "WHERE session_id = %(sid)s AND copied_through < %(version)s "
        f"ON CONFLICT ({columns}, day, model) DO UPDATE SET {_ADD.format(t=table)}",
        figures,
    )
