"""Wire formats of artifacts (`/api/v1/artifacts`). New fields always get defaults."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

import msgspec
from msgspec import Meta


class ArtifactOut(msgspec.Struct, kw_only=True):
    """An artifact's metadata; its bytes are at `/artifacts/{id}/download`."""

    id: UUID
    session_id: UUID
    kind: Literal["report", "ppt", "code", "file"]
    name: str
    size: int  # bytes
    sha256: str
    media_type: str
    created_at: datetime
    version: int  # the session version of its `ArtifactCreated` event (the SSE id)
    # A deck has a version per change, from 1 (`/artifacts/{id}/versions`); others have 1.
    latest_version: int = 1


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
