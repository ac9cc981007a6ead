"""The files of a workspace: uploaded by its users, written by the agent, deleted.

Each change is an event of one `WorkspaceFolder` aggregate per workspace, whose id is
derived from the workspace's (`folder_id`), so the list of files is a read model and
the log says who wrote what: a user (`FileUploaded`, and `FileDeleted` with a user
id) or the agent of a session (`FileWritten`, and `FileDeleted` with a session id).
An event holds a file's path, the sha256 of its bytes (the bytes are in the blob
store, content-addressed), its size and media type; never the bytes.

A file keeps its id while its path is written again (its `version` counts the
writes); a path deleted and written again is a new file. Paths are relative,
normalized, and stay inside the workspace (`domain/file_paths.py`); a path cannot be both a
file and a folder of other files, so the files can always be laid out on a disk.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import datetime
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from domain.authors import Author, ByAgent, ByUser
from domain.errors import Conflict, DomainError, InvalidCommand, NotFound
from domain.file_paths import DEFAULT_MEDIA_TYPE, check_media_type, check_path, shown_path

MAX_FILES = 10_000  # files of one workspace at a time

# Fixed forever: the id of every workspace's folder is derived from it.
_FILES = UUID("6f1d2c84-93a7-4b5e-8c0f-2e7a9d4b1c35")
_SHA256 = re.compile(r"[0-9a-f]{64}")


def folder_id(workspace_id: UUID) -> UUID:
    """The id of the aggregate that holds the workspace's files (its folder)."""
    return uuid5(_FILES, str(workspace_id))


class FileNotFound(NotFound):
    """No such file in the workspace (another workspace's files are not found either)."""

    def __init__(self, what: str) -> None:
        super().__init__(f"no file {what} in this workspace")


class PathConflict(Conflict):
    """A path that is a folder of other files, or lies inside a file."""

    code = "PATH_CONFLICT"


class TooManyFiles(InvalidCommand):
    code = "TOO_MANY_FILES"


class FileTooLarge(DomainError):
    """More bytes than a workspace file may have (HTTP 413)."""

    code = "PAYLOAD_TOO_LARGE"
    http_status = 413

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"the file has {size} bytes; a workspace file may have at most {limit}")
        self.size = size
        self.limit = limit


@dataclass(frozen=True)
class WorkspaceFile:
    """A file as it is now: where, which bytes, and who made and last changed it."""

    file_id: UUID
    path: str
    blob_ref: str  # the sha256 of its bytes
    size: int
    media_type: str
    version: int  # 1 when made; each later write adds one
    created_by: Author
    updated_by: Author
    created_at: datetime
    updated_at: datetime

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[-1]


class WorkspaceFolder(Aggregate):
    """The files of one workspace, by path: what its agents' work directory holds."""

    class FolderCreated(Aggregate.Created):
        workspace_id: UUID

    class FileUploaded(Aggregate.Event):
        file_id: UUID
        path: str
        blob_ref: str
        size: int
        media_type: str
        user_id: UUID

        def apply(self, aggregate: Aggregate) -> None:
            assert isinstance(aggregate, WorkspaceFolder)
            aggregate.put(self, ByUser(self.user_id))

    class FileWritten(Aggregate.Event):
        file_id: UUID
        path: str
        blob_ref: str
        size: int
        media_type: str
        session_id: UUID

        def apply(self, aggregate: Aggregate) -> None:
            assert isinstance(aggregate, WorkspaceFolder)
            aggregate.put(self, ByAgent(self.session_id))

    class FileDeleted(Aggregate.Event):
        file_id: UUID
        path: str
        user_id: UUID | None  # exactly one of the two is set
        session_id: UUID | None

    @event(FolderCreated)
    def __init__(self, workspace_id: UUID) -> None:
        self.workspace_id = workspace_id
        self.files: dict[str, WorkspaceFile] = {}  # by path

    @classmethod
    def create(cls, workspace_id: UUID) -> WorkspaceFolder:
        return cls._create(cls.FolderCreated, id=folder_id(workspace_id), workspace_id=workspace_id)

    # -- queries ------------------------------------------------------------------

    def at(self, path: str) -> WorkspaceFile:
        path = check_path(path)
        found = self.files.get(path)
        if found is None:
            raise FileNotFound(shown_path(path))
        return found

    def by_id(self, file_id: UUID) -> WorkspaceFile:
        for file in self.files.values():
            if file.file_id == file_id:
                return file
        raise FileNotFound(str(file_id))

    def listing(self) -> list[WorkspaceFile]:
        """The files, by path."""
        return [self.files[path] for path in sorted(self.files)]

    def check_write(self, path: str) -> str:
        """The normalized path, if a file may be written there now."""
        path = check_path(path)
        if path in self.files:
            return path
        if len(self.files) >= MAX_FILES:
            raise TooManyFiles(f"a workspace holds at most {MAX_FILES} files: delete some first")
        folder = path + "/"
        inside = next((p for p in self.files if p.startswith(folder)), None)
        if inside is not None:
            raise PathConflict(f"{shown_path(path)} is a folder holding {shown_path(inside)}")
        parts = path.split("/")
        for depth in range(1, len(parts)):
            parent = "/".join(parts[:depth])
            if parent in self.files:
                raise PathConflict(
                    f"{shown_path(parent)} is a file, so it cannot hold {shown_path(path)}"
                )
        return path

    # -- commands -----------------------------------------------------------------

    def write(
        self, path: str, blob_ref: str, size: int, media_type: str, by: Author
    ) -> WorkspaceFile:
        """Write the file at `path` (made, or a new version); the same bytes and media
        type again record nothing."""
        path = self.check_write(path)
        if not _SHA256.fullmatch(blob_ref):
            raise InvalidCommand("a blob ref is the sha256 of the bytes (64 hex characters)")
        if size < 0:
            raise InvalidCommand("a size is at least 0")
        media_type = check_media_type(media_type) or DEFAULT_MEDIA_TYPE
        current = self.files.get(path)
        if current is not None and (current.blob_ref, current.media_type) == (
            blob_ref,
            media_type,
        ):
            return current
        file_id = current.file_id if current else uuid5(self.id, f"{self.version + 1}")
        fields = {
            "file_id": file_id, "path": path, "blob_ref": blob_ref, "size": size,
            "media_type": media_type,
        }  # fmt: skip
        match by:
            case ByUser(user_id=user_id):
                self.trigger_event(self.FileUploaded, **fields, user_id=user_id)
            case ByAgent(session_id=session_id):
                self.trigger_event(self.FileWritten, **fields, session_id=session_id)
        return self.files[path]

    def delete(self, file: WorkspaceFile, by: Author) -> None:
        if self.files.get(file.path) != file:
            raise FileNotFound(str(file.file_id))
        match by:
            case ByUser(user_id=user_id):
                self._deleted(file.file_id, file.path, user_id, None)
            case ByAgent(session_id=session_id):
                self._deleted(file.file_id, file.path, None, session_id)

    def put(self, e: FileUploaded | FileWritten, by: Author) -> None:
        """Apply a write: the file made at version 1, or its next version."""
        current = self.files.get(e.path)
        if current is None:
            self.files[e.path] = WorkspaceFile(
                e.file_id, e.path, e.blob_ref, e.size, e.media_type, 1, by, by, e.timestamp,
                e.timestamp,
            )  # fmt: skip
        else:
            self.files[e.path] = replace(
                current, blob_ref=e.blob_ref, size=e.size, media_type=e.media_type,
                version=current.version + 1, updated_by=by, updated_at=e.timestamp,
            )  # fmt: skip

    @event(FileDeleted)
    def _deleted(
        self, file_id: UUID, path: str, user_id: UUID | None, session_id: UUID | None
    ) -> None:
        del self.files[path]


WorkspaceFolderEvent = (
    WorkspaceFolder.FolderCreated
    | WorkspaceFolder.FileUploaded
    | WorkspaceFolder.FileWritten
    | WorkspaceFolder.FileDeleted
)
WORKSPACE_FOLDER_EVENT_CLASSES: tuple[type[WorkspaceFolderEvent], ...] = (
    WorkspaceFolderEvent.__args__
)
