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
    type: str  # its media type
    version: int  # 1 when made; each later write adds one
    created_at: datetime
    updated_at: datetime
    created_by: FileAuthor
    updated_by: FileAuthor
    url: str  # its bytes


class WorkspaceFilePage(msgspec.Struct):
    """The workspace's files, by path; `next_cursor` gives the next page (None: none)."""

    items: list[WorkspaceFileOut]
    next_cursor: str | None
