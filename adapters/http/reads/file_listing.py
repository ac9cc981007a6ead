"""The workspace files read model, as the file handlers read it
(`adapters/http/routes/workspace_files.py`)."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from adapters.http.reads.read_your_writes import ViewWaiter
from application.bridge import SyncBridge
from projections.workspace_files import FileRow, WorkspaceFilesView


@dataclass(frozen=True)
class FileListing:
    """The workspace files read model, read once it has what the accounts' log held."""

    view: WorkspaceFilesView
    waiter: ViewWaiter
    bridge: SyncBridge

    async def files(self, workspace_id: UUID) -> list[FileRow]:
        await self.waiter.caught_up(WorkspaceFilesView.name)
        return await self.bridge(self.view.files, workspace_id)
