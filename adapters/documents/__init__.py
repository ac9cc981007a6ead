"""Document rendering: a report's Markdown as a PDF (ReportLab)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from adapters.documents.pdf import ReportLabDocumentRenderer


class PdfRenderer:
    """`DocumentRenderer` by `ReportLabDocumentRenderer`, made with the first document:
    ReportLab takes a quarter of a second to import, and most processes never write a
    PDF. Made on the event loop with no await in between, so there is only ever one
    (ReportLab's per-process state allows one build at a time)."""

    def __init__(self) -> None:
        self._renderer: ReportLabDocumentRenderer | None = None

    async def render_pdf(self, title: str, markdown: str) -> bytes:
        if self._renderer is None:
            from adapters.documents.pdf import ReportLabDocumentRenderer

            self._renderer = ReportLabDocumentRenderer()
        return await self._renderer.render_pdf(title, markdown)
