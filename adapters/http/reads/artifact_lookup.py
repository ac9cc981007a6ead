"""Artifacts by id for a caller allowed to see their session, and their versions.

An artifact is found in the artifacts read model, then its session goes through the
tenant check: another tenant's artifact answers exactly as an id that does not exist.
The read model trails the log by milliseconds, so an artifact is looked up once the view
has applied everything the log held when asked (waiting at most `read_your_writes.WAIT`
seconds): an artifact just announced on a stream is found, and so is its version just
announced (a slide regenerated, then its versions asked for).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from adapters.http.access import Access, Caller
from adapters.http.errors import ApiError
from adapters.http.reads.read_your_writes import ViewWaiter
from application.bridge import SyncBridge
from domain.errors import SessionNotFound
from projections.artifacts import ArtifactRow, ArtifactsView, ArtifactVersion


@dataclass(frozen=True)
class ArtifactLookup:
    """Artifacts by id, for a caller allowed to see their session."""

    view: ArtifactsView
    waiter: ViewWaiter
    access: Access
    bridge: SyncBridge

    async def find(self, caller: Caller, artifact_id: UUID) -> ArtifactRow:
        await self.waiter.caught_up(ArtifactsView.name)
        row = await self.bridge(self.view.get, artifact_id)
        if row is None:
            raise _not_found(artifact_id)
        try:
            await self.access.session_workspace(caller.user, row.session_id)
        except SessionNotFound:
            raise _not_found(artifact_id) from None
        return row

    async def listing(
        self,
        workspace_ids: list[UUID],
        session_id: UUID | None,
        kind: str | None,
        after: tuple[datetime, int, UUID] | None,
        limit: int,
    ) -> list[ArtifactRow]:
        """Artifacts of workspaces the caller may see (checked by the caller)."""
        await self.waiter.caught_up(ArtifactsView.name)
        return await self.bridge(
            self.view.listing, workspace_ids, session_id=session_id, kind=kind, after=after,
            limit=limit,
        )  # fmt: skip

    async def version(self, row: ArtifactRow, version: int | None) -> ArtifactVersion:
        """Version `version` of the artifact (from 1; None: its latest)."""
        versions = await self.versions(row)
        wanted = row.latest_version if version is None else version
        found = next((v for v in versions if v.artifact_version == wanted), None)
        if found is None:
            raise ApiError(
                404,
                f"artifact {row.artifact_id} has no version {wanted} (versions 1-"
                f"{row.latest_version})",
                "VERSION_NOT_FOUND",
            )
        return found

    async def versions(self, row: ArtifactRow) -> list[ArtifactVersion]:
        versions = await self.bridge(self.view.versions, row.artifact_id)
        # An artifact the view applied before it kept versions has just its row.
        return versions or [
            ArtifactVersion(
                1, row.version, row.name, row.blob_ref, row.size, row.sha256, row.media_type,
                "created", None, row.created_at,
            )
        ]  # fmt: skip


def _not_found(artifact_id: UUID) -> ApiError:
    return ApiError(404, f"artifact {artifact_id} not found", "NOT_FOUND")
