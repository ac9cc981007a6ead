"""Workspace files, as the agent's tools and the API use them.

What is where, and who put it there, is the workspace's `WorkspaceFolder` aggregate;
the bytes are in the blob store, by their sha256. The folder lives in the accounts
application's store, so its events travel the accounts' log beside the workspaces
they belong to; this service takes whichever eventsourcing application holds it (an
in-memory one for the engine alone). Who may touch a workspace is the caller's
check: the API checks the user's role, a tool runs in a session of the workspace.

Bad input writes nothing: the size, the path and the folder's room are checked before
the bytes go to the blob store, and the bytes are stored before the event that names
them, so no event ever names bytes that are not there.
"""

from __future__ import annotations

import builtins
import mimetypes
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import IntegrityError

from application.bridge import SyncBridge
from application.ports import BlobStore
from domain.authors import Author
from domain.errors import Conflict
from domain.file_paths import DEFAULT_MEDIA_TYPE, check_media_type, check_path
from domain.workspace_files import (
    FileNotFound,
    FileTooLarge,
    WorkspaceFile,
    WorkspaceFolder,
    folder_id,
)

DEFAULT_MAX_BYTES = 25 * 1024 * 1024
RETRIES = 3  # a concurrent change of the same folder is a conflict: load and try again
T = TypeVar("T")

# Only the standard library's own table (no /etc/mime.types: the same answer on every
# machine), and the types it lacks that workspaces hold.
_TYPES = mimetypes.MimeTypes()
_MORE_TYPES = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".toml": "application/toml",
    ".ipynb": "application/x-ipynb+json",
    ".log": "text/plain",
    ".jsonl": "application/jsonl",
    ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ".parquet": "application/vnd.apache.parquet",
    ".gz": "application/gzip",
    ".tgz": "application/gzip",
}


def media_type_for(path: str, declared: str | None = None) -> str:
    """The declared media type if it says something, else the one of the path's suffix."""
    checked = check_media_type(declared)
    if checked is not None and checked != DEFAULT_MEDIA_TYPE:
        return checked
    suffix = PurePosixPath(path).suffix.lower()
    strict, loose = _TYPES.types_map[True], _TYPES.types_map[False]
    return _MORE_TYPES.get(suffix) or strict.get(suffix) or loose.get(suffix) or DEFAULT_MEDIA_TYPE


class WorkspaceFiles:
    """The files of workspaces: list, read, write and delete, each recorded with its author."""

    def __init__(
        self,
        store: Application[UUID],
        blobs: BlobStore,
        bridge: SyncBridge,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self.store = store
        self.blobs = blobs
        self.bridge = bridge
        self.max_bytes = max_bytes

    # -- reading ------------------------------------------------------------------

    async def list(self, workspace_id: UUID) -> builtins.list[WorkspaceFile]:
        """The workspace's files, by path (none for a workspace that never had any)."""
        folder = await self.bridge(self._folder, workspace_id)
        return folder.listing() if folder else []

    async def stat(self, workspace_id: UUID, path: str) -> WorkspaceFile:
        """The file at `path`; `FileNotFound` if there is none (`InvalidPath` if it is no path)."""
        checked = check_path(path)
        folder = await self.bridge(self._folder, workspace_id)
        if folder is None:
            raise FileNotFound(repr(checked))
        return folder.at(checked)

    async def file(self, workspace_id: UUID, file_id: UUID) -> WorkspaceFile:
        """The workspace's file with this id; `FileNotFound` for any other id."""
        folder = await self.bridge(self._folder, workspace_id)
        if folder is None:
            raise FileNotFound(str(file_id))
        return folder.by_id(file_id)

    async def read(self, workspace_id: UUID, path: str) -> bytes:
        """The bytes of the file at `path`."""
        return await self.bytes_of(await self.stat(workspace_id, path))

    async def bytes_of(self, file: WorkspaceFile) -> bytes:
        return await self.blobs.get(file.blob_ref)

    # -- changing -----------------------------------------------------------------

    async def write(
        self,
        workspace_id: UUID,
        path: str,
        data: bytes,
        media_type: str | None,
        by: Author,
    ) -> WorkspaceFile:
        """Write `data` at `path` (a new file, or a new version of the one there).

        `media_type` None (or `application/octet-stream`) means: from the path's suffix.
        """
        if len(data) > self.max_bytes:
            raise FileTooLarge(len(data), self.max_bytes)
        folder = await self.bridge(self._folder, workspace_id)
        checked = folder.check_write(path) if folder else check_path(path)
        media = media_type_for(checked, media_type)
        blob_ref = await self.blobs.put(data, content_type=media)
        return await self.bridge(
            self._change,
            workspace_id,
            lambda f: f.write(checked, blob_ref, len(data), media, by),
        )

    async def delete(self, workspace_id: UUID, path: str, by: Author) -> WorkspaceFile:
        """Delete the file at `path`; the file as it was. Its bytes stay in the blob store
        (other files or events may share them)."""
        checked = check_path(path)
        return await self.bridge(self._remove, workspace_id, lambda f: f.at(checked), by)

    async def delete_id(self, workspace_id: UUID, file_id: UUID, by: Author) -> WorkspaceFile:
        """Delete the workspace's file with this id; the file as it was."""
        return await self.bridge(self._remove, workspace_id, lambda f: f.by_id(file_id), by)

    # -- on the store (blocking: run on the bridge) ---------------------------------

    def _folder(self, workspace_id: UUID) -> WorkspaceFolder | None:
        try:
            folder: object = self.store.repository.get(folder_id(workspace_id))
        except AggregateNotFoundError:
            return None
        if not isinstance(folder, WorkspaceFolder):
            raise TypeError(f"{folder_id(workspace_id)} is not a workspace folder: {folder!r}")
        return folder

    def _remove(
        self,
        workspace_id: UUID,
        find: Callable[[WorkspaceFolder], WorkspaceFile],
        by: Author,
    ) -> WorkspaceFile:
        def remove(folder: WorkspaceFolder) -> WorkspaceFile:
            file = find(folder)
            folder.delete(file, by)
            return file

        return self._change(workspace_id, remove)

    def _change(self, workspace_id: UUID, change: Callable[[WorkspaceFolder], T]) -> T:
        """Apply `change` to the folder (made if need be) and save it; again if another
        writer saved first. A change that raises saves nothing."""
        for _ in range(RETRIES - 1):
            try:
                return self._apply(workspace_id, change)
            except IntegrityError:
                continue
        try:
            return self._apply(workspace_id, change)
        except IntegrityError:
            raise Conflict("the workspace's files changed meanwhile; try again") from None

    def _apply(self, workspace_id: UUID, change: Callable[[WorkspaceFolder], T]) -> T:
        folder = self._folder(workspace_id) or WorkspaceFolder.create(workspace_id)
        result = change(folder)
        self.store.save(folder)
        return result
