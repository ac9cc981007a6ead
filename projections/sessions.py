"""The sessions read model: one row per session with its counts and tokens."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import assert_never
from uuid import UUID

from psycopg import Cursor
from psycopg.rows import DictRow

from domain.events import SessionEvent
from domain.session import AgentSession as S
from domain.session_decks import DeckLog as D
from projections.view import SessionView

FAILED_TOOL_STATUSES = ("error", "interrupted")


@dataclass(frozen=True)
class SessionSummary:
    """A row of the sessions view."""

    session_id: UUID
    workspace_id: UUID
    owner_id: UUID
    title: str
    task_type: str
    model: str
    status: str
    archived: bool
    version: int
    message_count: int
    tool_call_count: int
    failure_count: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    active_run: UUID | None
    created_at: datetime
    last_activity_at: datetime


COLUMNS = ", ".join(SessionSummary.__dataclass_fields__)


class SessionsView(SessionView):
    """Sessions by workspace and status, with message, tool and token counts."""

    name = "sessions"
    create_statements = (
        """CREATE TABLE IF NOT EXISTS sessions_view (
            session_id uuid PRIMARY KEY,
            workspace_id uuid NOT NULL,
            owner_id uuid NOT NULL,
            title text NOT NULL,
            task_type text NOT NULL,
            model text NOT NULL,
            status text NOT NULL,
            archived boolean NOT NULL DEFAULT false,
            version bigint NOT NULL,
            message_count integer NOT NULL DEFAULT 0,
            tool_call_count integer NOT NULL DEFAULT 0,
            failure_count integer NOT NULL DEFAULT 0,
            input_tokens bigint NOT NULL DEFAULT 0,
            output_tokens bigint NOT NULL DEFAULT 0,
            cache_read_tokens bigint NOT NULL DEFAULT 0,
            cache_write_tokens bigint NOT NULL DEFAULT 0,
            active_run uuid,
            created_at timestamptz NOT NULL,
            last_activity_at timestamptz NOT NULL
        )""",
        """CREATE INDEX IF NOT EXISTS sessions_view_by_workspace
            ON sessions_view (workspace_id, archived, last_activity_at DESC)""",
    )
    clear_statements = ("DELETE FROM sessions_view",)

    def apply_session_event(self, curs: Cursor[DictRow], event: SessionEvent) -> None:
        if isinstance(event, S.SessionStarted):
            curs.execute(
                "INSERT INTO sessions_view (session_id, workspace_id, owner_id, title, "
                "task_type, model, status, version, created_at, last_activity_at) "
                "VALUES (%s, %s, %s, %s, %s, %s, 'created', %s, %s, %s)",
                (
                    event.originator_id, event.workspace_id, event.owner_id, event.title,
                    event.task_type, event.model, event.originator_version,
                    event.timestamp, event.timestamp,
                ),
            )  # fmt: skip
            return
        assignments, params = _changes(event)
        prefix = f"{assignments}, " if assignments else ""
        curs.execute(
            f"UPDATE sessions_view SET {prefix}version = %s, "
            "last_activity_at = %s WHERE session_id = %s",
            (*params, event.originator_version, event.timestamp, event.originator_id),
        )

    # -- queries --------------------------------------------------------------

    def get(self, session_id: UUID) -> SessionSummary | None:
        with self.datastore.get_connection() as conn:
            row = conn.execute(
                f"SELECT {COLUMNS} FROM sessions_view WHERE session_id = %s",
                (session_id,),
            ).fetchone()
        return SessionSummary(**row) if row else None

    def list_for_workspace(
        self,
        workspace_id: UUID | Sequence[UUID],
        *,
        status: str | None = None,
        include_archived: bool = False,
        limit: int = 20,
        after: tuple[datetime, UUID] | None = None,
    ) -> tuple[list[SessionSummary], int]:
        """A page of a workspace's (or several's) sessions, newest activity first, after
        the (last_activity_at, session_id) `after`; and how many there are in all."""
        ids = [workspace_id] if isinstance(workspace_id, UUID) else list(workspace_id)
        where = "workspace_id = ANY(%s)"
        params: list[object] = [ids]
        if not include_archived:
            where += " AND NOT archived"
        if status is not None:
            where += " AND status = %s"
            params.append(status)
        page_where, page_params = where, list(params)
        if after is not None:
            page_where += " AND (last_activity_at, %s) < (%s, session_id)"
            page_params += [after[1], after[0]]
        with self.datastore.get_connection() as conn:
            rows = conn.execute(
                f"SELECT {COLUMNS} FROM sessions_view WHERE {page_where} "  # noqa: S608
                "ORDER BY last_activity_at DESC, session_id LIMIT %s",
                (*page_params, limit),
            ).fetchall()
            count = conn.execute(
                f"SELECT count(*) AS n FROM sessions_view WHERE {where}",  # noqa: S608
                params,
            ).fetchone()
        return [SessionSummary(**r) for r in rows], int(count["n"]) if count else 0

    def session_counts(self, workspace_ids: Sequence[UUID]) -> dict[UUID, int]:
        """How many sessions (archived ones left out) each workspace holds."""
        with self.datastore.get_connection() as conn:
            rows = conn.execute(
                "SELECT workspace_id, count(*) AS n FROM sessions_view "
                "WHERE workspace_id = ANY(%s) AND NOT archived GROUP BY workspace_id",
                (list(workspace_ids),),
            ).fetchall()
        return {r["workspace_id"]: int(r["n"]) for r in rows}

    def all_rows(self) -> list[dict[str, object]]:
        """Every row, ordered (for comparing a rebuilt view with the live one)."""
        with self.datastore.get_connection() as conn:
            return list(conn.execute("SELECT * FROM sessions_view ORDER BY session_id").fetchall())


Change = tuple[str, tuple[object, ...]]  # SQL assignments and their parameters
NOTHING: Change = ("", ())


def _changes(e: SessionEvent) -> Change:
    """Column changes for one event, beyond version and last activity."""
    match e:
        case S.UserMessageAppended():
            return "message_count = message_count + 1", ()
        case S.AssistantTurnRecorded():
            return (
                "message_count = message_count + 1, input_tokens = input_tokens + %s, "
                "output_tokens = output_tokens + %s, cache_read_tokens = cache_read_tokens + %s, "
                "cache_write_tokens = cache_write_tokens + %s",
                (e.input_tokens, e.output_tokens, e.cache_read_tokens, e.cache_write_tokens),
            )
        case S.ToolCallRequested():
            return "tool_call_count = tool_call_count + 1", ()
        case S.ToolResultRecorded(status=status):
            return "failure_count = failure_count + %s", (int(status in FAILED_TOOL_STATUSES),)
        case S.RunRequested(run_id=run_id):
            return "active_run = %s", (run_id,)
        case S.RunStarted():
            return "status = 'running'", ()
        case S.ConfirmationRequested():
            return "status = 'waiting'", ()
        case S.ConfirmationGiven():
            return "status = CASE WHEN status = 'waiting' THEN 'running' ELSE status END", ()
        case S.RunCompleted():
            return "status = 'completed', active_run = NULL", ()
        case S.RunFailed():
            return "status = 'error', active_run = NULL", ()
        case S.RunStopped():
            return "status = 'stopped', active_run = NULL", ()
        case S.SessionRenamed(title=title):
            return "title = %s", (title,)
        case S.SessionArchived():
            return "archived = true", ()
        case S.SessionCompleted():
            return "status = 'completed'", ()
        case (
            S.SessionStarted() | S.PlanUpdated() | S.FindingRecorded() | S.ProgressNoted()
            | S.StrikeRecorded() | S.RebootRequested() | S.ContextCompacted()
            | S.BudgetThresholdReached() | S.SourceRecorded() | S.SkillActivated()
            | S.MemoriesRecalled()
            | S.ArtifactCreated() | D.DeckEvent()
            | S.ModelFallbackUsed() | S.McpToolsetChanged()
        ):  # fmt: skip
            return NOTHING
        case _:
            assert_never(e)
