"""Artifacts: metadata, versions, the bytes, and a preview, by artifact id (found for
the caller by `ArtifactLookup`)."""

from __future__ import annotations

import asyncio
import io
from typing import Annotated
from uuid import UUID

import pypdf
from litestar import Controller, Response, get
from litestar.params import FromPath, QueryParameter
from pypdf.errors import PyPdfError

from adapters.http.deck_pages import deck_pdf
from adapters.http.deps import ApiDep, Caller
from adapters.http.downloads import content_disposition, download
from adapters.http.errors import ApiError
from domain.decks import PPTX
from projections.artifacts import ArtifactRow, ArtifactVersion
from schemas.artifacts import (
    ArtifactOut,
    ArtifactVersionOut,
    ArtifactVersions,
    MarkdownPreview,
    PdfPreview,
    Preview,
)

TEXT_TYPES = ("text/", "application/json", "application/x-yaml", "application/yaml")


class ArtifactController(Controller):
    path = "/api/v1/artifacts"
    tags = ["artifacts"]

    @get("/{artifact_id:uuid}")
    async def artifact(
        self,
        artifact_id: FromPath[UUID],
        request: Caller,
        api: ApiDep,
    ) -> ArtifactOut:
        """An artifact's metadata."""
        return artifact_out(await api.artifacts.find(request, artifact_id))

    @get("/{artifact_id:uuid}/versions")
    async def versions(
        self,
        artifact_id: FromPath[UUID],
        request: Caller,
        api: ApiDep,
    ) -> ArtifactVersions:
        """Every version of the artifact, oldest first (a deck gets one per change)."""
        row = await api.artifacts.find(request, artifact_id)
        versions = await api.artifacts.versions(row)
        return ArtifactVersions(items=[version_out(v) for v in versions])

    @get("/{artifact_id:uuid}/download")
    async def download(
        self,
        artifact_id: FromPath[UUID],
        request: Caller,
        api: ApiDep,
        version: Annotated[int | None, QueryParameter(ge=1)] = None,
        format: Annotated[str | None, QueryParameter()] = None,
    ) -> Response[bytes]:
        """The artifact's bytes (its latest version, or `version`), with its media type
        and file name; a slide deck as `format=pptx` (its own) or `format=pdf`."""
        row = await api.artifacts.find(request, artifact_id)
        found = await api.artifacts.version(row, version)
        if format is None or (format == "pptx" and row.kind == "ppt"):
            data = await api.blobs.get(found.blob_ref)
            return download(data, found.media_type, content_disposition(found.name))
        if format != "pdf" or row.kind != "ppt":
            raise ApiError(
                400, f"format {format!r}: a deck downloads as pptx or pdf; other artifacts as "
                "they are (no format)", "BAD_FORMAT",
            )  # fmt: skip
        pdf = await deck_pdf(api.previews, found.blob_ref)
        name = found.name.removesuffix(".pptx") + ".pdf"
        return download(pdf, "application/pdf", content_disposition(name))

    @get("/{artifact_id:uuid}/preview")
    async def preview(
        self,
        artifact_id: FromPath[UUID],
        request: Caller,
        api: ApiDep,
        version: Annotated[int | None, QueryParameter(ge=1)] = None,
    ) -> Response[Preview]:
        """A deck's slides (text and thumbnail URLs) at its latest version or `version`;
        a report's Markdown (or any text artifact's text); a PDF's text by page."""
        row = await api.artifacts.find(request, artifact_id)
        if row.kind == "ppt" and row.media_type == PPTX:
            return await api.decks.preview(row, await api.artifacts.version(row, version))
        media_type = row.media_type.split(";", 1)[0].strip().lower()
        if media_type == "application/pdf":
            data = await api.blobs.get(row.blob_ref)
            return Response(PdfPreview(await asyncio.to_thread(pdf_pages, data)))
        if media_type.startswith(TEXT_TYPES):
            return Response(
                MarkdownPreview((await api.blobs.get(row.blob_ref)).decode(errors="replace"))
            )
        raise ApiError(
            415, f"no preview for {media_type} artifacts: download it", "PREVIEW_UNSUPPORTED"
        )


def artifact_out(row: ArtifactRow) -> ArtifactOut:
    return ArtifactOut(
        id=row.artifact_id, session_id=row.session_id, kind=row.kind, name=row.name,
        size=row.size, sha256=row.sha256, media_type=row.media_type,
        created_at=row.created_at, version=row.version, latest_version=row.latest_version,
    )  # fmt: skip


def version_out(v: ArtifactVersion) -> ArtifactVersionOut:
    return ArtifactVersionOut(
        version=v.artifact_version, session_version=v.session_version, name=v.name,
        size=v.size, sha256=v.sha256, media_type=v.media_type, change=v.change,
        page_index=v.page_index, created_at=v.created_at,
    )  # fmt: skip


def pdf_pages(data: bytes) -> list[str]:
    """The text of each page of a PDF."""
    try:
        return [page.extract_text() for page in pypdf.PdfReader(io.BytesIO(data)).pages]
    except PyPdfError as e:
        raise ApiError(422, f"the PDF could not be read: {e}", "PREVIEW_FAILED") from e
