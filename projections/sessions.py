"""The sessions read model: one row per session with its counts and tokens."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import assert_never
from uuid import UUID

from psycopg import Cursor
from psycopg.rows import DictRow

from domain.events import SessionEvent, as_session_event
from domain.session import AgentSession as S
from domain.session_decks import DeckLog as D
from projections.view import Event, SessionView

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

    def apply_events(self, curs: Cursor[DictRow], events: Sequence[Event]) -> None:
        """A batch: a session's row is inserted at its start and updated once, with what
        all of its events in the batch change (the counts summed, the last status)."""
        rows: dict[UUID, _Row] = {}
        for event in map(as_session_event, events):
            if isinstance(event, S.SessionStarted):
                self._insert(curs, event)
                continue
            row = rows.setdefault(event.originator_id, _Row())
            _fold(row, event)
            row.version, row.at = event.originator_version, event.timestamp
        for session_id, row in rows.items():
            assignments, params = row.sql()
            curs.execute(
                f"UPDATE sessions_view SET {assignments} WHERE session_id = %s",
                (*params, session_id),
            )

    def apply_session_event(self, curs: Cursor[DictRow], event: SessionEvent) -> None:
        self.apply_events(curs, [event])

    def _insert(self, curs: Cursor[DictRow], event: S.SessionStarted) -> None:
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


@dataclass
class _Row:
    """What a batch's events change in one session's row, folded in their order."""

    adds: dict[str, int] = field(default_factory=dict)  # column -> amount added
    sets: dict[str, object] = field(default_factory=dict)  # column -> its new value
    # A confirmation given while the status is not known here: running if it was waiting.
    resume_if_waiting: bool = False
    # A confirmation asked while whether a run is going is not known here: the status if
    # the row has an active run, else what it was (None: the row's own, not changed).
    if_run: str | None = None
    otherwise: object = None
    version: int = 0
    at: datetime | None = None

    def add(self, column: str, amount: int = 1) -> None:
        self.adds[column] = self.adds.get(column, 0) + amount

    def set(self, column: str, value: object) -> None:
        self.sets[column] = value
        if column == "status":
            self.resume_if_waiting, self.if_run = False, None

    def wait(self) -> None:
        """A confirmation asked: a run going waits for it; a call made by hand outside any
        run changes no status (as `AgentSession` has it)."""
        if "active_run" in self.sets:
            if self.sets["active_run"] is not None:
                self.set("status", "waiting")
            return
        if self.if_run is None:
            self.otherwise = self.sets.pop("status", None)
            self.resume_if_waiting = False
        self.if_run = "waiting"

    def resume(self) -> None:
        if self.if_run is not None:
            self.if_run = "running"
        elif "status" not in self.sets:
            self.resume_if_waiting = True
        elif self.sets["status"] == "waiting":
            self.sets["status"] = "running"

    def sql(self) -> tuple[str, tuple[object, ...]]:
        """The UPDATE's assignments (column names from `_fold` alone) and parameters."""
        parts = [f"{c} = {c} + %s" for c in self.adds]
        parts += [f"{c} = %s" for c in self.sets]
        rule: tuple[object, ...] = ()
        if self.resume_if_waiting:
            parts.append("status = CASE WHEN status = 'waiting' THEN 'running' ELSE status END")
        elif self.if_run is not None:
            otherwise = "status" if self.otherwise is None else "%s"
            parts.append(f"status = CASE WHEN active_run IS NULL THEN {otherwise} ELSE %s END")
            rule = (*(() if self.otherwise is None else (self.otherwise,)), self.if_run)
        parts += ["version = %s", "last_activity_at = %s"]
        params = (*self.adds.values(), *self.sets.values(), *rule, self.version, self.at)
        return ", ".join(parts), params


def _fold(row: _Row, e: SessionEvent) -> None:
    """The event's change to its session's row, beyond version and last activity."""
    match e:
        case S.UserMessageAppended():
            row.add("message_count")
        case S.AssistantTurnRecorded():
            row.add("message_count")
            row.add("input_tokens", e.input_tokens)
            row.add("output_tokens", e.output_tokens)
            row.add("cache_read_tokens", e.cache_read_tokens)
            row.add("cache_write_tokens", e.cache_write_tokens)
        case S.ToolCallRequested():
            row.add("tool_call_count")
        case S.ToolResultRecorded(status=status):
            row.add("failure_count", int(status in FAILED_TOOL_STATUSES))
        case S.RunRequested(run_id=run_id):
            row.set("active_run", run_id)
        case S.RunStarted():
            row.set("status", "running")
        case S.ConfirmationRequested():
            row.wait()
        case S.ConfirmationGiven():
            row.resume()
        case S.RunCompleted():
            row.set("status", "completed")
            row.set("active_run", None)
        case S.RunFailed():
            row.set("status", "error")
            row.set("active_run", None)
        case S.RunStopped():
            row.set("status", "stopped")
            row.set("active_run", None)
        case S.SessionRenamed(title=title):
            row.set("title", title)
        case S.SessionArchived():
            row.set("archived", True)
        case S.SessionCompleted():
            row.set("status", "completed")
        case (
            S.SessionStarted() | S.PlanUpdated() | S.FindingRecorded() | S.ProgressNoted()
            | S.StrikeRecorded() | S.RebootRequested() | S.ContextCompacted()
            | S.BudgetThresholdReached() | S.SourceRecorded() | S.SkillActivated()
            | S.MemoriesRecalled()
            | S.ArtifactCreated() | D.DeckEvent()
            | S.ModelFallbackUsed() | S.McpToolsetChanged()
        ):  # fmt: skip
            pass
        case _:
            assert_never(e)
