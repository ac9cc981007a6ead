"""Wire formats of artifacts (`/api/v1/artifacts`). New fields always get defaults."""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

import msgspec


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


class MarkdownPreview(msgspec.Struct, tag="markdown", tag_field="format"):
    """A Markdown or text artifact: its text."""

    text: str


class PdfPreview(msgspec.Struct, tag="pdf", tag_field="format"):
    """A PDF artifact: the text of each page, in order."""

    pages: list[str]


Preview = MarkdownPreview | PdfPreview
