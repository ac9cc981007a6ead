"""The human-approval inbox: every confirmation asked for, by its action id."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import assert_never
from uuid import UUID

from psycopg import Cursor
from psycopg.rows import DictRow
from psycopg.types.json import Jsonb

from domain.events import SessionEvent
from domain.session import AgentSession as S
from domain.session_decks import DeckLog as D
from projections.view import SessionView


@dataclass(frozen=True)
class ConfirmationRow:
    action_id: str
    session_id: UUID
    tool_use_id: str
    tool: str
    args: dict[str, object]
    description: str
    status: str  # pending, approved, rejected, expired
    created_at: datetime
    feedback: str | None
    responded_by: str | None
    responded_at: datetime | None


COLUMNS = ", ".join(ConfirmationRow.__dataclass_fields__)


class ConfirmationsView(SessionView):
    """Pending and answered confirmations; a request that lost its call is `expired`."""

    name = "confirmations"
    create_statements = (
        """CREATE TABLE IF NOT EXISTS confirmations_view (
            action_id text PRIMARY KEY,
            session_id uuid NOT NULL,
            tool_use_id text NOT NULL,
            tool text NOT NULL,
            args jsonb NOT NULL,
            description text NOT NULL,
            status text NOT NULL,
            created_at timestamptz NOT NULL,
            feedback text,
            responded_by text,
            responded_at timestamptz
        )""",
        """CREATE INDEX IF NOT EXISTS confirmations_view_pending
            ON confirmations_view (session_id, created_at) WHERE status = 'pending'""",
    )
    clear_statements = ("DELETE FROM confirmations_view",)

    def apply_session_event(self, curs: Cursor[DictRow], event: SessionEvent) -> None:
        match event:
            case S.ConfirmationRequested(
                action_id=action_id, tool_use_id=tool_use_id, tool=tool, args=args,
                description=description,
            ):  # fmt: skip
                curs.execute(
                    "INSERT INTO confirmations_view (action_id, session_id, tool_use_id, tool, "
                    "args, description, status, created_at) "
                    "VALUES (%s, %s, %s, %s, %s, %s, 'pending', %s)",
                    (
                        action_id, event.originator_id, tool_use_id, tool, Jsonb(args),
                        description, event.timestamp,
                    ),
                )  # fmt: skip
            case S.ConfirmationGiven(action_id=action_id, approved=approved):
                curs.execute(
                    "UPDATE confirmations_view SET status = %s, feedback = %s, "
                    "responded_by = %s, responded_at = %s WHERE action_id = %s",
                    (
                        "approved" if approved else "rejected",
                        event.feedback, event.by, event.timestamp, action_id,
                    ),
                )  # fmt: skip
            case S.ToolResultRecorded(tool_use_id=tool_use_id):
                # A call that ended without an answer (a stop, a fork) takes its request
                # with it.
                curs.execute(
                    "UPDATE confirmations_view SET status = 'expired', responded_at = %s "
                    "WHERE session_id = %s AND tool_use_id = %s AND status = 'pending'",
                    (event.timestamp, event.originator_id, tool_use_id),
                )
            case (
                S.SessionStarted() | S.UserMessageAppended() | S.AssistantTurnRecorded()
                | S.ToolCallRequested() | S.PlanUpdated() | S.FindingRecorded()
                | S.ProgressNoted() | S.StrikeRecorded() | S.RebootRequested()
                | S.ContextCompacted() | S.BudgetThresholdReached() | S.SourceRecorded()
                | S.SkillActivated() | S.MemoriesRecalled()
                | S.ArtifactCreated() | D.DeckEvent()
                | S.RunRequested()
                | S.RunStarted() | S.RunCompleted() | S.RunFailed() | S.RunStopped()
                | S.SessionRenamed() | S.SessionCompleted() | S.SessionArchived()
                | S.ModelFallbackUsed() | S.McpToolsetChanged()
            ):  # fmt: skip
                pass
            case _:
                assert_never(event)

    def get(self, action_id: str) -> ConfirmationRow | None:
        with self.datastore.get_connection() as conn:
            row = conn.execute(
                f"SELECT {COLUMNS} FROM confirmations_view WHERE action_id = %s",  # noqa: S608
                (action_id,),
            ).fetchone()
        return ConfirmationRow(**row) if row else None

    def pending(self, session_id: UUID) -> list[ConfirmationRow]:
        with self.datastore.get_connection() as conn:
            rows = conn.execute(
                f"SELECT {COLUMNS} FROM confirmations_view "  # noqa: S608
                "WHERE session_id = %s AND status = 'pending' ORDER BY created_at",
                (session_id,),
            ).fetchall()
        return [ConfirmationRow(**r) for r in rows]
