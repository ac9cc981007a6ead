"""The artifacts read model: every artifact a session created, by its id.

An artifact's id is derived from its session and the version of its `ArtifactCreated`
event (`artifact_id_of`), so a rebuild gives every artifact the id it had. A forked
session's copies of its parent's artifacts are artifacts of its own, with their own ids.
The workspace of each session is kept too: what a tenant check starts from.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import assert_never
from uuid import UUID

from psycopg import Cursor
from psycopg.rows import DictRow

from domain.events import SessionEvent
from domain.session import AgentSession as S
from domain.values import ArtifactKind, artifact_id_of
from projections.view import SessionView


@dataclass(frozen=True)
class ArtifactRow:
    artifact_id: UUID
    session_id: UUID
    workspace_id: UUID
    version: int
    kind: ArtifactKind
    name: str
    blob_ref: str
    size: int
    sha256: str
    media_type: str
    created_at: datetime


COLUMNS = ", ".join(ArtifactRow.__dataclass_fields__)


class ArtifactsView(SessionView):
    """Artifacts by id, with their session and workspace."""

    name = "artifacts"
    create_statements = (
        """CREATE TABLE IF NOT EXISTS artifacts_sessions (
            session_id uuid PRIMARY KEY,
            workspace_id uuid NOT NULL
        )""",
        """CREATE TABLE IF NOT EXISTS artifacts_view (
            artifact_id uuid PRIMARY KEY,
            session_id uuid NOT NULL,
            workspace_id uuid NOT NULL,
            version integer NOT NULL,
            kind text NOT NULL,
            name text NOT NULL,
            blob_ref text NOT NULL,
            size bigint NOT NULL,
            sha256 text NOT NULL,
            media_type text NOT NULL,
            created_at timestamptz NOT NULL
        )""",
        "CREATE INDEX IF NOT EXISTS artifacts_view_by_session "
        "ON artifacts_view (session_id, version)",
    )
    clear_statements = ("DELETE FROM artifacts_view", "DELETE FROM artifacts_sessions")

    def apply_session_event(self, curs: Cursor[DictRow], event: SessionEvent) -> None:
        match event:
            case S.SessionStarted(workspace_id=workspace_id):
                curs.execute(
                    "INSERT INTO artifacts_sessions (session_id, workspace_id) VALUES (%s, %s)",
                    (event.originator_id, workspace_id),
                )
            case S.ArtifactCreated(kind=kind, name=name, blob_ref=blob_ref, size=size):
                sid, version = event.originator_id, event.originator_version
                # No session row means a log without its start: the view stops (NOT NULL).
                curs.execute(
                    f"INSERT INTO artifacts_view ({COLUMNS}) VALUES (%s, %s, "  # noqa: S608
                    "(SELECT workspace_id FROM artifacts_sessions WHERE session_id = %s), "
                    "%s, %s, %s, %s, %s, %s, %s, %s)",
                    (
                        artifact_id_of(sid, version), sid, sid, version, kind, name, blob_ref,
                        size, event.sha256, event.media_type, event.timestamp,
                    ),
                )  # fmt: skip
            case (
                S.UserMessageAppended() | S.AssistantTurnRecorded() | S.ToolCallRequested()
                | S.ToolResultRecorded() | S.ConfirmationRequested() | S.ConfirmationGiven()
                | S.PlanUpdated() | S.FindingRecorded() | S.ProgressNoted() | S.StrikeRecorded()
                | S.RebootRequested() | S.ContextCompacted() | S.BudgetThresholdReached()
                | S.SourceRecorded() | S.SkillActivated() | S.RunRequested() | S.RunStarted()
                | S.RunCompleted() | S.RunFailed() | S.RunStopped() | S.SessionRenamed()
                | S.SessionCompleted() | S.SessionArchived()
            ):  # fmt: skip
                pass
            case _:
                assert_never(event)

    def get(self, artifact_id: UUID) -> ArtifactRow | None:
        with self.datastore.get_connection() as conn:
            row = conn.execute(
                f"SELECT {COLUMNS} FROM artifacts_view WHERE artifact_id = %s",  # noqa: S608
                (artifact_id,),
            ).fetchone()
        return ArtifactRow(**row) if row else None

    def of_session(self, session_id: UUID) -> list[ArtifactRow]:
        with self.datastore.get_connection() as conn:
            rows = conn.execute(
                f"SELECT {COLUMNS} FROM artifacts_view "  # noqa: S608
                "WHERE session_id = %s ORDER BY version",
                (session_id,),
            ).fetchall()
        return [ArtifactRow(**r) for r in rows]
