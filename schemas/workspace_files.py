"""Wire formats of workspace files (`/api/v1/workspaces/{id}/files`). New fields always
get defaults."""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

import msgspec


class FileAuthor(msgspec.Struct, kw_only=True):
    """Who did it: a user (`id` is the user's), or the agent (`id` is its session's)."""

    kind: Literal["user", "agent"]
    id: UUID


class WorkspaceFileOut(msgspec.Struct, kw_only=True):
    """A workspace file; its bytes are at `/workspaces/{workspace_id}/files/{id}`."""

    id: UUID
    workspace_id: UUID
    path: str  # relative to the workspace, `/` between folders
    name: str  # the path's last part
    size: int  # bytes
    sha256: str
    media_type: str
    version: int  # 1 when made; each later write adds one
    created_at: datetime | None = None  # unknown in an answer from the write side
    updated_at: datetime | None = None
    created_by: FileAuthor
    updated_by: FileAuthor


class WorkspaceFilePage(msgspec.Struct):
    """The workspace's files, by path."""

    items: list[WorkspaceFileOut]
