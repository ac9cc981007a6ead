"""A deck version's pages and its PDF, from the deck's data in its session's log and from
LibreOffice (the deck routes: `adapters/http/routes/deck_pages.py`)."""

from __future__ import annotations

from dataclasses import dataclass

from litestar import Response

from adapters.http.errors import ApiError
from adapters.slides.office import ConversionFailed, OfficeUnavailable
from adapters.slides.previews import SlidePreviews
from application.bridge import SyncBridge
from application.sessions import SessionService
from domain.deck_fold import DeckHistory
from domain.decks import Deck
from projections.artifacts import ArtifactRow, ArtifactVersion
from schemas.artifacts import (
    PptPage,
    PptPreview,
    Preview,
)


async def deck_pdf(previews: SlidePreviews, blob_ref: str) -> bytes:
    """The deck version's PDF, or the HTTP error saying why there is none."""
    try:
        return await previews.pdf(blob_ref)
    except OfficeUnavailable as e:
        raise ApiError(501, f"PDF export is unavailable: {e.reason}", "PDF_UNAVAILABLE") from e
    except ConversionFailed as e:
        raise ApiError(502, f"LibreOffice could not convert the deck: {e}", "PDF_FAILED") from e


@dataclass(frozen=True)
class DeckPages:
    """A deck version's pages, from the deck's data in its session's log."""

    sessions: SessionService
    bridge: SyncBridge
    previews: SlidePreviews

    async def deck(self, row: ArtifactRow, version: int) -> Deck:
        log = await self.bridge(lambda: list(self.sessions.session_events(row.session_id)))
        history = DeckHistory.of(log)
        current = history.by_created_at(row.version)
        if current is None:
            raise ApiError(404, f"artifact {row.artifact_id} is not a deck", "NOT_FOUND")
        return history.versions(current.number)[version - 1]

    async def preview(self, row: ArtifactRow, version: ArtifactVersion) -> Response[Preview]:
        deck = await self.deck(row, version.artifact_version)
        reason = self.previews.unavailable()
        base = f"/api/v1/artifacts/{row.artifact_id}/pages"
        pages = [
            PptPage(
                index=i,
                thumbnail_url=None
                if reason
                else f"{base}/{i}/thumbnail?version={version.artifact_version}",
                content=slide.text(),
            )
            for i, slide in enumerate(deck.slides, 1)
        ]
        headers = {"X-Preview-Thumbnails": f'unavailable; reason="{reason}"'} if reason else {}
        preview = PptPreview(version=version.artifact_version, pages=pages)
        return Response(preview, headers=headers)
