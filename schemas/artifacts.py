"""Wire formats of artifacts (`/api/v1/artifacts`). New fields always get defaults."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

import msgspec
from msgspec import Meta

ArtifactType = Literal["report", "ppt", "code", "file"]


class ArtifactOut(msgspec.Struct, kw_only=True):
    """An artifact at its latest version; its bytes are at `download_url`."""

    id: UUID
    session_id: UUID
    type: ArtifactType
    name: str
    size: int  # bytes
    media_type: str
    sha256: str
    # The artifact's version, from 1: a deck gets one per change
    # (`/artifacts/{id}/versions`); anything else has 1.
    version: int
    latest_version: int
    created_at: datetime
    download_url: str
    preview_url: str | None  # None: no preview for its type (download it)
    # `session_version`: the version of the session event that made it (the SSE id).
    metadata: dict[str, str | int]


class ArtifactPage(msgspec.Struct):
    """Artifacts in the order they were made; `next_cursor` gives the next page."""

    items: list[ArtifactOut]
    next_cursor: str | None


class ArtifactVersionOut(msgspec.Struct, kw_only=True):
    """One version of an artifact (`download?version=N`)."""

    version: int  # from 1
    session_version: int  # the event that made it (the SSE id)
    name: str
    size: int
    sha256: str
    media_type: str
    change: str  # "created", or a deck's change: "slide_rewritten", "slide_added", ...
    page_index: int | None  # the slide it changed, from 1
    created_at: datetime


class ArtifactVersions(msgspec.Struct, kw_only=True):
    items: list[ArtifactVersionOut]


class RegenerateBody(msgspec.Struct, forbid_unknown_fields=True):
    """Regenerate one slide of a deck (`POST /artifacts/{id}/regenerate`)."""

    page_index: Annotated[int, Meta(ge=1)]  # from 1, as previews count pages
    instructions: Annotated[str, Meta(min_length=1, max_length=4000)]


class RegenerationDone(msgspec.Struct, kw_only=True):
    """The regeneration stream's last event (`done`): the deck's new version."""

    status: Literal["completed"] = "completed"
    artifact_id: UUID
    version: int
    page_index: int


class RegenerationFailed(msgspec.Struct, kw_only=True):
    """The regeneration stream's last event when it failed (`error`); nothing was written."""

    status: Literal["failed"] = "failed"
    detail: str
    error_code: str
    artifact_id: UUID


class MarkdownPreview(msgspec.Struct, tag="markdown", tag_field="format"):
    """A Markdown or text artifact: its text."""

    text: str


class PdfPreview(msgspec.Struct, tag="pdf", tag_field="format"):
    """A PDF artifact: the text of each page, in order."""

    pages: list[str]


class PptPage(msgspec.Struct, kw_only=True):
    index: int  # from 1
    thumbnail_url: str | None  # a PNG; None where thumbnails are unavailable (see header)
    content: str  # the slide's text: title, bullets, body, chart figures


class PptPreview(msgspec.Struct, tag="ppt", tag_field="format", kw_only=True):
    """A slide deck: each slide's text and thumbnail, at one version of the deck."""

    type: Literal["ppt"] = "ppt"
    version: int
    pages: list[PptPage]


Preview = MarkdownPreview | PdfPreview | PptPreview
