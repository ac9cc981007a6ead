"""Artifacts: metadata, versions, the bytes, and a preview, by artifact id (found for
the caller by `ArtifactLookup`)."""

from __future__ import annotations

import asyncio
import io
from typing import Annotated
from uuid import UUID

import pypdf
from litestar import Controller, Response, get
from litestar.params import FromPath, FromQuery, QueryParameter
from pypdf.errors import PyPdfError

from adapters.http.deps import Api, ApiDep, Caller
from adapters.http.errors import ApiError
from adapters.http.reads.artifact_urls import TEXT_TYPES, bare_type, download_url, preview_url
from adapters.http.reads.cursors import Position, instant
from adapters.http.reads.deck_versions import deck_pdf
from adapters.http.reads.downloads import content_disposition, download
from domain.decks import PPTX
from projections.artifacts import ArtifactRow, ArtifactVersion
from schemas.artifacts import (
    ArtifactOut,
    ArtifactPage,
    ArtifactType,
    ArtifactVersionOut,
    ArtifactVersions,
    MarkdownPreview,
    PdfPreview,
    Preview,
)

MAX_PAGE = 200


class ArtifactController(Controller):
    path = "/api/v1/artifacts"
    tags = ["artifacts"]

    @get("/")
    async def list_artifacts(
        self,
        request: Caller,
        api: ApiDep,
        session_id: FromQuery[UUID | None] = None,
        workspace_id: FromQuery[UUID | None] = None,
        type: FromQuery[ArtifactType | None] = None,  # noqa: A002 (the seed's name)
        limit: Annotated[int, QueryParameter(ge=1, le=MAX_PAGE)] = 50,
        cursor: Annotated[str | None, QueryParameter(max_length=500)] = None,
    ) -> ArtifactPage:
        """Artifacts in the order they were made, each at its latest version: of a session
        (`session_id`), of a workspace (`workspace_id`), or of every workspace the caller
        sees; `type` keeps one kind."""
        if session_id is not None:
            scope = [await api.access.session_workspace(request.user, session_id)]
        elif workspace_id is not None:
            await api.access.workspace(request.user, workspace_id)
            scope = [workspace_id]
        else:
            mine = await api.bridge(api.workspaces.workspaces_of, request.user)
            scope = [w.workspace_id for w in mine]
        return await artifact_page(api, scope, session_id, type, cursor, limit)

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
        media_type = bare_type(row.media_type)
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


async def artifact_page(
    api: Api,
    workspace_ids: list[UUID],
    session_id: UUID | None,
    kind: str | None,
    cursor: str | None,
    limit: int,
) -> ArtifactPage:
    """A page of the artifacts of `workspace_ids` (the caller's to see: checked by it)."""
    after = api.cursors.read("artifacts", cursor)
    position = None
    if after is not None:
        at, version, artifact_id = after
        position = (instant(at), int(version), UUID(str(artifact_id)))
    rows = await api.artifacts.listing(workspace_ids, session_id, kind, position, limit + 1)
    taken, next_cursor = api.cursors.cut("artifacts", rows, limit, _position)
    return ArtifactPage(items=[artifact_out(r) for r in taken], next_cursor=next_cursor)


def _position(row: ArtifactRow) -> Position:
    return (row.created_at.isoformat(), row.version, str(row.artifact_id))


def artifact_out(row: ArtifactRow) -> ArtifactOut:
    return ArtifactOut(
        id=row.artifact_id, session_id=row.session_id, type=row.kind, name=row.name,
        size=row.size, media_type=row.media_type, sha256=row.sha256,
        version=row.latest_version, latest_version=row.latest_version,
        created_at=row.created_at, download_url=download_url(row.artifact_id),
        preview_url=preview_url(row.artifact_id, row.kind, row.media_type),
        metadata={"session_version": row.version},
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
