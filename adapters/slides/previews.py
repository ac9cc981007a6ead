"""PDF export and slide thumbnails of deck versions, through LibreOffice, cached.

A deck version is a PPTX blob; its PDF (LibreOffice) and the PNG of each page
(PDFium) depend on nothing else, so they are kept by blob ref: the most recent
`keep` versions in this process, each converted once however many requests ask at
the same time. Without LibreOffice, `unavailable()` says why and the caller answers
without thumbnails (preview) or with 501 (PDF export).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from dataclasses import dataclass

from adapters.slides.office import Office, pdf_page_images
from application.ports import BlobStore


@dataclass(frozen=True)
class Rendered:
    pdf: bytes
    pages: tuple[bytes, ...]  # one PNG per page, in order


class SlidePreviews:
    def __init__(
        self, office: Office, blobs: BlobStore, *, width: int = 640, keep: int = 32
    ) -> None:
        self.office = office
        self.blobs = blobs
        self.width = width
        self.keep = keep
        self._done: OrderedDict[str, Rendered] = OrderedDict()
        self._pending: dict[str, asyncio.Task[Rendered]] = {}

    def unavailable(self) -> str | None:
        """Why decks cannot be converted here (LibreOffice missing), or None."""
        return self.office.unavailable()

    async def pdf(self, blob_ref: str) -> bytes:
        """The deck version's PDF; `OfficeUnavailable` or `ConversionFailed`."""
        return (await self.rendered(blob_ref)).pdf

    async def thumbnail(self, blob_ref: str, page: int) -> bytes | None:
        """The PNG of page `page` (from 1), or None if the deck has no such page."""
        pages = (await self.rendered(blob_ref)).pages
        return pages[page - 1] if 1 <= page <= len(pages) else None

    async def rendered(self, blob_ref: str) -> Rendered:
        done = self._done.get(blob_ref)
        if done is not None:
            self._done.move_to_end(blob_ref)
            return done
        task = self._pending.get(blob_ref)
        if task is None:  # the first asker converts; the others wait for the same result
            task = asyncio.create_task(self._render(blob_ref), name=f"slide preview {blob_ref}")
            self._pending[blob_ref] = task
            task.add_done_callback(lambda _: self._pending.pop(blob_ref, None))
        return await asyncio.shield(task)

    async def _render(self, blob_ref: str) -> Rendered:
        pdf = await self.office.to_pdf(await self.blobs.get(blob_ref))
        pages = await asyncio.to_thread(pdf_page_images, pdf, width=self.width)
        rendered = Rendered(pdf, tuple(pages))
        self._done[blob_ref] = rendered
        while len(self._done) > self.keep:
            self._done.popitem(last=False)
        return rendered
