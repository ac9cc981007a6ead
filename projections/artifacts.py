"""The artifacts read model: every artifact a session created, by its id.

An artifact's id is derived from its session and the version of its `ArtifactCreated`
event (`artifact_id_of`), so a rebuild gives every artifact the id it had. A forked
session's copies of its parent's artifacts are artifacts of its own, with their own ids.
The workspace of each session is kept too: what a tenant check starts from.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import assert_never
from uuid import UUID

from psycopg import Cursor
from psycopg.rows import DictRow

from domain.decks import PPTX
from domain.events import SessionEvent
from domain.session import AgentSession as S
from domain.session_decks import DeckLog as D
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
    latest_version: int  # a deck's versions count its changes; anything else has one


@dataclass(frozen=True)
class ArtifactVersion:
    artifact_version: int
    session_version: int
    name: str
    blob_ref: str
    size: int
    sha256: str
    media_type: str
    change: str  # "created", or a deck's change ("slide_rewritten", ...)
    page_index: int | None  # the slide it changed, from 1
    created_at: datetime


COLUMNS = ", ".join(ArtifactRow.__dataclass_fields__)
VERSION_COLUMNS = ", ".join(ArtifactVersion.__dataclass_fields__)
CHANGES = {
    S.SlideAdded: "slide_added", S.SlideRewritten: "slide_rewritten",
    S.SlideRemoved: "slide_removed", S.SlidesReordered: "slides_reordered",
    S.TemplateChanged: "template_changed",
}  # fmt: skip


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
        "CREATE INDEX IF NOT EXISTS artifacts_view_by_workspace "
        "ON artifacts_view (workspace_id, created_at, version, artifact_id)",
        # A deck gets a version per change; the row above is its latest.
        "ALTER TABLE artifacts_view ADD COLUMN IF NOT EXISTS latest_version integer "
        "NOT NULL DEFAULT 1",
        """CREATE TABLE IF NOT EXISTS artifact_versions (
            artifact_id uuid NOT NULL,
            artifact_version integer NOT NULL,
            session_version integer NOT NULL,
            name text NOT NULL,
            blob_ref text NOT NULL,
            size bigint NOT NULL,
            sha256 text NOT NULL,
            media_type text NOT NULL,
            change text NOT NULL,
            page_index integer,
            created_at timestamptz NOT NULL,
            PRIMARY KEY (artifact_id, artifact_version)
        )""",
    )
    clear_statements = (
        "DELETE FROM artifacts_view", "DELETE FROM artifacts_sessions",
        "DELETE FROM artifact_versions",
    )  # fmt: skip

    def apply_session_event(self, curs: Cursor[DictRow], event: SessionEvent) -> None:
        match event:
            case S.SessionStarted(workspace_id=workspace_id):
                curs.execute(
                    "INSERT INTO artifacts_sessions (session_id, workspace_id) VALUES (%s, %s)",
                    (event.originator_id, workspace_id),
                )
            case S.ArtifactCreated(kind=kind, media_type=media_type):
                _created(curs, event, kind, media_type)
            case S.DeckCreated():
                _created(curs, event, "ppt", PPTX)
            case D.DeckEvent():
                _deck_version(curs, event)
            case (
                S.UserMessageAppended() | S.AssistantTurnRecorded() | S.ToolCallRequested()
                | S.ToolResultRecorded() | S.ConfirmationRequested() | S.ConfirmationGiven()
                | S.PlanUpdated() | S.FindingRecorded() | S.ProgressNoted() | S.StrikeRecorded()
                | S.RebootRequested() | S.ContextCompacted() | S.BudgetThresholdReached()
                | S.SourceRecorded() | S.SkillActivated() | S.RunRequested() | S.RunStarted()
                | S.MemoriesRecalled()
                | S.RunCompleted() | S.RunFailed() | S.RunStopped() | S.SessionRenamed()
                | S.SessionCompleted() | S.SessionArchived()
                | S.ModelFallbackUsed() | S.McpToolsetChanged()
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

    def versions(self, artifact_id: UUID) -> list[ArtifactVersion]:
        with self.datastore.get_connection() as conn:
            rows = conn.execute(
                f"SELECT {VERSION_COLUMNS} FROM artifact_versions "  # noqa: S608
                "WHERE artifact_id = %s ORDER BY artifact_version",
                (artifact_id,),
            ).fetchall()
        return [ArtifactVersion(**r) for r in rows]

    def listing(
        self,
        workspace_ids: Sequence[UUID],
        *,
        session_id: UUID | None = None,
        kind: str | None = None,
        after: tuple[datetime, int, UUID] | None = None,
        limit: int = 50,
    ) -> list[ArtifactRow]:
        """Artifacts of the workspaces (of one session, of one kind) in the order they
        were made, after the (created_at, version, artifact_id) `after`."""
        where: list[str] = ["workspace_id = ANY(%s)"]
        params: list[object] = [list(workspace_ids)]
        for column, value in (("session_id", session_id), ("kind", kind)):
            if value is not None:
                where.append(f"{column} = %s")
                params.append(value)
        if after is not None:
            where.append("(created_at, version, artifact_id) > (%s, %s, %s)")
            params.extend(after)
        with self.datastore.get_connection() as conn:
            rows = conn.execute(
                f"SELECT {COLUMNS} FROM artifacts_view WHERE {' AND '.join(where)} "  # noqa: S608
                "ORDER BY created_at, version, artifact_id LIMIT %s",
                (*params, limit),
            ).fetchall()
        return [ArtifactRow(**r) for r in rows]


def _created(
    curs: Cursor[DictRow],
    e: S.ArtifactCreated | S.DeckCreated,
    kind: ArtifactKind,
    media_type: str,
) -> None:
    """A new artifact, at its version 1."""
    sid, version = e.originator_id, e.originator_version
    artifact_id = artifact_id_of(sid, version)
    # No session row means a log without its start: the view stops (NOT NULL).
    curs.execute(
        f"INSERT INTO artifacts_view ({COLUMNS}) VALUES (%s, %s, "  # noqa: S608
        "(SELECT workspace_id FROM artifacts_sessions WHERE session_id = %s), "
        "%s, %s, %s, %s, %s, %s, %s, %s, 1)",
        (
            artifact_id, sid, sid, version, kind, e.name, e.blob_ref, e.size, e.sha256,
            media_type, e.timestamp,
        ),
    )  # fmt: skip
    _version(curs, artifact_id, 1, e, "created", None)


def _deck_version(curs: Cursor[DictRow], e: D.DeckEvent) -> None:
    """A deck's change: its new version, now the artifact's latest."""
    artifact_id = artifact_id_of(e.originator_id, e.created_at)
    page = getattr(e, "index", None)
    _version(curs, artifact_id, e.deck_version, e, CHANGES[type(e)], page)
    curs.execute(
        "UPDATE artifacts_view SET blob_ref = %s, size = %s, sha256 = %s, latest_version = %s "
        "WHERE artifact_id = %s",
        (e.blob_ref, e.size, e.sha256, e.deck_version, artifact_id),
    )


def _version(
    curs: Cursor[DictRow],
    artifact_id: UUID,
    version: int,
    e: S.ArtifactCreated | D.DeckEvent,
    change: str,
    page: int | None,
) -> None:
    media_type = e.media_type if isinstance(e, S.ArtifactCreated) else PPTX
    curs.execute(
        f"INSERT INTO artifact_versions (artifact_id, {VERSION_COLUMNS}) "  # noqa: S608
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (
            artifact_id, version, e.originator_version, e.name, e.blob_ref, e.size, e.sha256,
            media_type, change, page, e.timestamp,
        ),
    )  # fmt: skip
