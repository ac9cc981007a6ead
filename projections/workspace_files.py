"""The workspace files read model: each workspace's files as they are now, with who made
and who last changed each (a user, or the agent of a session). Fed from the accounts
application's log, where workspace folders live; the other account events pass by.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal, assert_never
from uuid import UUID

from psycopg import Cursor
from psycopg.rows import DictRow

from domain.accounts import ACCOUNT_EVENT_CLASSES
from domain.workspace_files import (
    WORKSPACE_FOLDER_EVENT_CLASSES,
    WorkspaceFolder,
    WorkspaceFolderEvent,
)
from projections.view import Event, View

TABLES = ("workspace_folders", "workspace_files")
AuthorKind = Literal["user", "agent"]


@dataclass(frozen=True)
class FileRow:
    file_id: UUID
    workspace_id: UUID
    path: str
    blob_ref: str
    size: int
    media_type: str
    version: int
    created_at: datetime
    created_by_kind: AuthorKind
    created_by: UUID  # a user id, or the session id of the agent
    updated_at: datetime
    updated_by_kind: AuthorKind
    updated_by: UUID


COLUMNS = ", ".join(FileRow.__dataclass_fields__)


class WorkspaceFilesView(View):
    """The files of each workspace, by path."""

    name = "workspace_files"
    create_statements = (
        """CREATE TABLE IF NOT EXISTS workspace_folders (
            folder_id uuid PRIMARY KEY,
            workspace_id uuid NOT NULL
        )""",
        """CREATE TABLE IF NOT EXISTS workspace_files (
            file_id uuid PRIMARY KEY,
            workspace_id uuid NOT NULL,
            path text NOT NULL,
            blob_ref text NOT NULL,
            size bigint NOT NULL,
            media_type text NOT NULL,
            version integer NOT NULL,
            created_at timestamptz NOT NULL,
            created_by_kind text NOT NULL,
            created_by uuid NOT NULL,
            updated_at timestamptz NOT NULL,
            updated_by_kind text NOT NULL,
            updated_by uuid NOT NULL,
            UNIQUE (workspace_id, path)
        )""",
    )
    clear_statements = tuple(f"DELETE FROM {table}" for table in TABLES)

    def apply_event(self, curs: Cursor[DictRow], event: Event) -> None:
        if not isinstance(event, ACCOUNT_EVENT_CLASSES):
            raise TypeError(f"not an account event: {event!r}")
        if isinstance(event, WORKSPACE_FOLDER_EVENT_CLASSES):  # the rest are other views'
            self._apply(curs, event)

    def _apply(self, curs: Cursor[DictRow], event: WorkspaceFolderEvent) -> None:
        folder = event.originator_id
        match event:
            case WorkspaceFolder.FolderCreated(workspace_id=workspace_id):
                curs.execute(
                    "INSERT INTO workspace_folders (folder_id, workspace_id) VALUES (%s, %s)",
                    (folder, workspace_id),
                )
            case WorkspaceFolder.FileUploaded(user_id=by):
                _put(curs, event, "user", by)
            case WorkspaceFolder.FileWritten(session_id=by):
                _put(curs, event, "agent", by)
            case WorkspaceFolder.FileDeleted(file_id=file_id):
                curs.execute("DELETE FROM workspace_files WHERE file_id = %s", (file_id,))
            case _:
                assert_never(event)

    # -- queries --------------------------------------------------------------

    def files(self, workspace_id: UUID) -> list[FileRow]:
        """The workspace's files, by path."""
        with self.datastore.get_connection() as conn:
            rows = conn.execute(
                f"SELECT {COLUMNS} FROM workspace_files "  # noqa: S608
                "WHERE workspace_id = %s ORDER BY path",
                (workspace_id,),
            ).fetchall()
        return [FileRow(**r) for r in rows]

    def all_rows(self) -> dict[str, list[dict[str, object]]]:
        """Every table's rows, ordered (for comparing a rebuilt view with the live one)."""
        with self.datastore.get_connection() as conn:
            return {
                table: list(conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall())
                for table in TABLES
            }


def _put(
    curs: Cursor[DictRow],
    e: WorkspaceFolder.FileUploaded | WorkspaceFolder.FileWritten,
    kind: AuthorKind,
    by: UUID,
) -> None:
    """A file made, or a new version of it (a row per file; its first maker is kept)."""
    # No folder row means a log without its start: the view stops (NOT NULL).
    curs.execute(
        f"INSERT INTO workspace_files ({COLUMNS}) VALUES (%s, "  # noqa: S608
        "(SELECT workspace_id FROM workspace_folders WHERE folder_id = %s), "
        "%s, %s, %s, %s, 1, %s, %s, %s, %s, %s, %s) "
        "ON CONFLICT (file_id) DO UPDATE SET blob_ref = EXCLUDED.blob_ref, "
        "size = EXCLUDED.size, media_type = EXCLUDED.media_type, "
        "version = workspace_files.version + 1, updated_at = EXCLUDED.updated_at, "
        "updated_by_kind = EXCLUDED.updated_by_kind, updated_by = EXCLUDED.updated_by",
        (
            e.file_id, e.originator_id, e.path, e.blob_ref, e.size, e.media_type,
            e.timestamp, kind, by, e.timestamp, kind, by,
        ),
    )  # fmt: skip
