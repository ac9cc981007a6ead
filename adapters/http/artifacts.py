"""Artifacts: metadata, the bytes, and a preview, by artifact id.

An artifact is found in the artifacts read model, then its session goes through the
tenant check: another tenant's artifact answers exactly as an id that does not exist.
The read model trails the log by milliseconds, so an id the view does not know yet is
looked up again once the view has applied everything the log held when asked (for at
most `read_your_writes.WAIT` seconds): an artifact just announced on a stream is found.
"""

from __future__ import annotations

import asyncio
import io
from dataclasses import dataclass
from uuid import UUID

import pypdf
from litestar import Controller, Response, get
from pypdf.errors import PyPdfError

from adapters.http.deps import Access, Blobs, Caller
from adapters.http.downloads import content_disposition, download
from adapters.http.errors import ApiError
from adapters.http.read_your_writes import ViewWaiter
from application.bridge import SyncBridge
from domain.errors import SessionNotFound
from projections.artifacts import ArtifactRow, ArtifactsView
from schemas.artifacts import ArtifactOut, MarkdownPreview, PdfPreview, Preview

TEXT_TYPES = ("text/", "application/json", "application/x-yaml", "application/yaml")


@dataclass(frozen=True)
class ArtifactLookup:
    """Artifacts by id, for a caller allowed to see their session."""

    view: ArtifactsView
    waiter: ViewWaiter
    access: Access
    bridge: SyncBridge

    async def find(self, caller: Caller, artifact_id: UUID) -> ArtifactRow:
        row = await self.bridge(self.view.get, artifact_id)
        if row is None and await self.waiter.caught_up(ArtifactsView.name):
            row = await self.bridge(self.view.get, artifact_id)
        if row is None:
            raise _not_found(artifact_id)
        try:
            await self.access.session(caller.user, row.session_id)
        except SessionNotFound:
            raise _not_found(artifact_id) from None
        return row


class ArtifactController(Controller):
    path = "/api/v1/artifacts"
    tags = ["artifacts"]

    @get("/{artifact_id:uuid}")
    async def artifact(
        self, artifact_id: UUID, request: Caller, artifacts: ArtifactLookup
    ) -> ArtifactOut:
        """An artifact's metadata."""
        return artifact_out(await artifacts.find(request, artifact_id))

    @get("/{artifact_id:uuid}/download")
    async def download(
        self, artifact_id: UUID, request: Caller, artifacts: ArtifactLookup, blobs: Blobs
    ) -> Response[bytes]:
        """The artifact's bytes, with its media type and file name."""
        row = await artifacts.find(request, artifact_id)
        data = await blobs.get(row.blob_ref)
        return download(data, row.media_type, content_disposition(row.name))

    @get("/{artifact_id:uuid}/preview")
    async def preview(
        self, artifact_id: UUID, request: Caller, artifacts: ArtifactLookup, blobs: Blobs
    ) -> Preview:
        """A report's Markdown (or any text artifact's text), or a PDF's text by page."""
        row = await artifacts.find(request, artifact_id)
        media_type = row.media_type.split(";", 1)[0].strip().lower()
        if media_type == "application/pdf":
            return PdfPreview(await asyncio.to_thread(pdf_pages, await blobs.get(row.blob_ref)))
        if media_type.startswith(TEXT_TYPES):
            return MarkdownPreview((await blobs.get(row.blob_ref)).decode(errors="replace"))
        raise ApiError(
            415, f"no preview for {media_type} artifacts: download it", "PREVIEW_UNSUPPORTED"
        )


def artifact_out(row: ArtifactRow) -> ArtifactOut:
    return ArtifactOut(
        id=row.artifact_id, session_id=row.session_id, kind=row.kind, name=row.name,
        size=row.size, sha256=row.sha256, media_type=row.media_type,
        created_at=row.created_at, version=row.version,
    )  # fmt: skip


def pdf_pages(data: bytes) -> list[str]:
    """The text of each page of a PDF."""
    try:
        return [page.extract_text() for page in pypdf.PdfReader(io.BytesIO(data)).pages]
    except PyPdfError as e:
        raise ApiError(422, f"the PDF could not be read: {e}", "PREVIEW_FAILED") from e


def _not_found(artifact_id: UUID) -> ApiError:
    return ApiError(404, f"artifact {artifact_id} not found", "NOT_FOUND")
