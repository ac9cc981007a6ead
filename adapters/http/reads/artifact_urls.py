"""Where an artifact's bytes and preview are: the URLs its resource and events carry."""

from __future__ import annotations

from uuid import UUID

from domain.decks import PPTX

BASE = "/api/v1/artifacts"
TEXT_TYPES = ("text/", "application/json", "application/x-yaml", "application/yaml")


def download_url(artifact_id: UUID) -> str:
    return f"{BASE}/{artifact_id}/download"


def preview_url(artifact_id: UUID, kind: str, media_type: str) -> str | None:
    """`GET /artifacts/{id}/preview` where it has one: a deck, a PDF, or text."""
    return f"{BASE}/{artifact_id}/preview" if previewable(kind, media_type) else None


def previewable(kind: str, media_type: str) -> bool:
    bare = bare_type(media_type)
    return (
        (kind == "ppt" and media_type == PPTX)
        or bare == "application/pdf"
        or (bare.startswith(TEXT_TYPES))
    )


def bare_type(media_type: str) -> str:
    """The media type without its parameters, lower case."""
    return media_type.split(";", 1)[0].strip().lower()
