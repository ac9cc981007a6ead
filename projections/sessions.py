"""The sessions read model: one row per session with its counts and tokens."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar
from uuid import UUID

from psycopg import Cursor
from psycopg.rows import DictRow

from projections.view import Event, View

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


class SessionsView(View):
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

    # Column changes per event type, beyond version and last activity.
    _SET: ClassVar[dict[str, Callable[[Event], tuple[str, tuple[object, ...]]]]] = {
        "UserMessageAppended": lambda e: ("message_count = message_count + 1", ()),
        "AssistantTurnRecorded": lambda e: (
            "message_count = message_count + 1, input_tokens = input_tokens + %s, "
            "output_tokens = output_tokens + %s, cache_read_tokens = cache_read_tokens + %s, "
            "cache_write_tokens = cache_write_tokens + %s",
            (e.input_tokens, e.output_tokens, e.cache_read_tokens, e.cache_write_tokens),  # type: ignore[attr-defined]
        ),
        "ToolCallRequested": lambda e: ("tool_call_count = tool_call_count + 1", ()),
        "ToolResultRecorded": lambda e: (
            "failure_count = failure_count + %s",
            (1 if e.status in FAILED_TOOL_STATUSES else 0,),  # type: ignore[attr-defined]
        ),
        "RunRequested": lambda e: ("active_run = %s", (e.run_id,)),  # type: ignore[attr-defined]
        "RunStarted": lambda e: ("status = 'running'", ()),
        "ConfirmationRequested": lambda e: ("status = 'waiting'", ()),
        "ConfirmationGiven": lambda e: (
            "status = CASE WHEN status = 'waiting' THEN 'running' ELSE status END",
            (),
        ),
        "RunCompleted": lambda e: ("status = 'completed', active_run = NULL", ()),
        "RunFailed": lambda e: ("status = 'error', active_run = NULL", ()),
        "RunStopped": lambda e: ("status = 'stopped', active_run = NULL", ()),
        "SessionRenamed": lambda e: ("title = %s", (e.title,)),  # type: ignore[attr-defined]
        "SessionArchived": lambda e: ("archived = true", ()),
        "SessionCompleted": lambda e: ("status = 'completed'", ()),
    }

    def apply_event(self, curs: Cursor[DictRow], event: Event) -> None:
        kind = type(event).__name__
        if kind == "SessionStarted":
            curs.execute(
                "INSERT INTO sessions_view (session_id, workspace_id, owner_id, title, "
                "task_type, model, status, version, created_at, last_activity_at) "
                "VALUES (%s, %s, %s, %s, %s, %s, 'created', %s, %s, %s)",
                (
                    event.originator_id, event.workspace_id, event.owner_id, event.title,  # type: ignore[attr-defined]
                    event.task_type, event.model, event.originator_version,  # type: ignore[attr-defined]
                    event.timestamp, event.timestamp,
                ),
            )  # fmt: skip
            return
        change = self._SET.get(kind)
        assignments, params = change(event) if change else ("", ())
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
        workspace_id: UUID,
        *,
        status: str | None = None,
        include_archived: bool = False,
        limit: int = 20,
        offset: int = 0,
    ) -> tuple[list[SessionSummary], int]:
        """A page of a workspace's sessions, newest activity first, and the total."""
        where = "workspace_id = %s"
        params: list[object] = [workspace_id]
        if not include_archived:
            where += " AND NOT archived"
        if status is not None:
            where += " AND status = %s"
            params.append(status)
        with self.datastore.get_connection() as conn:
            rows = conn.execute(
                f"SELECT {COLUMNS}, count(*) OVER () AS total FROM sessions_view "
                f"WHERE {where} ORDER BY last_activity_at DESC, session_id "
                "LIMIT %s OFFSET %s",
                (*params, limit, offset),
            ).fetchall()
            if rows:
                total = int(rows[0]["total"])
            else:
                count = conn.execute(
                    f"SELECT count(*) AS n FROM sessions_view WHERE {where}",
                    params,
                ).fetchone()
                total = int(count["n"]) if count else 0
        return [SessionSummary(**{k: v for k, v in r.items() if k != "total"}) for r in rows], total

    def active_runs(self) -> list[tuple[UUID, UUID]]:
        """(session, run) for every run that has not ended."""
        with self.datastore.get_connection() as conn:
            rows = conn.execute(
                "SELECT session_id, active_run FROM sessions_view WHERE active_run IS NOT NULL"
            ).fetchall()
        return [(r["session_id"], r["active_run"]) for r in rows]

    def all_rows(self) -> list[dict[str, object]]:
        """Every row, ordered (for comparing a rebuilt view with the live one)."""
        with self.datastore.get_connection() as conn:
            return list(conn.execute("SELECT * FROM sessions_view ORDER BY session_id").fetchall())
