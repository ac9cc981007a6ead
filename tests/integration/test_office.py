"""Slide decks to PDF through the real LibreOffice, and PDF pages to PNGs through PDFium.

One good 3-slide conversion is shared by the module; the other tests each start
soffice once or twice. Temp dirs are pointed at the test's own directory, so any
soffice process whose command line names it was started by the test.
"""

from __future__ import annotations

import asyncio
import io
import random
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import psutil
import pytest
from PIL import Image
from pptx import Presentation
from pypdf import PdfReader

from adapters.slides.office import (
    ConversionFailed,
    Office,
    OfficeUnavailable,
    pdf_page_count,
    pdf_page_images,
)
from tests.waiting import eventually_async

TITLES = ("One", "Two", "Three")

needs_soffice = pytest.mark.skipif(
    shutil.which("soffice") is None and shutil.which("libreoffice") is None,
    reason="LibreOffice is not installed (apt-get install libreoffice-impress)",
)


def three_slide_deck() -> bytes:
    deck = Presentation()
    for title in TITLES:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        assert slide.shapes.title is not None
        slide.shapes.title.text = title
        slide.placeholders[1].text = f"A point on slide {title.lower()}"
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


@pytest.fixture
def private_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Temp dirs (work dirs, profiles) made under this test's own directory."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def processes_naming(path: Path) -> list[psutil.Process]:
    """Live processes whose command line names `path` (zombies are already dead)."""
    found = []
    for process in psutil.process_iter(["cmdline", "status"]):
        cmdline = " ".join(process.info["cmdline"] or ())
        if str(path) in cmdline and process.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(process)
    return found


@pytest.fixture(scope="module")
async def pdf() -> AsyncIterator[bytes]:
    """The one good conversion, shared by the tests that read the PDF."""
    yield await Office().to_pdf(three_slide_deck())


@needs_soffice
def test_deck_becomes_a_pdf_with_one_page_per_slide(pdf: bytes) -> None:
    assert pdf_page_count(pdf) == 3
    assert len(PdfReader(io.BytesIO(pdf)).pages) == 3


@needs_soffice
def test_pdf_pages_carry_the_slide_titles_in_order(pdf: bytes) -> None:
    texts = [page.extract_text() for page in PdfReader(io.BytesIO(pdf)).pages]
    assert [title in text for title, text in zip(TITLES, texts, strict=True)] == [True] * 3
    whole = "\n".join(texts)
    assert whole.index("One") < whole.index("Two") < whole.index("Three")


@needs_soffice
def test_each_page_becomes_a_png_as_wide_as_asked(pdf: bytes) -> None:
    box = PdfReader(io.BytesIO(pdf)).pages[0].mediabox
    pngs = pdf_page_images(pdf, width=320)
    assert len(pngs) == 3
    for png in pngs:
        image = Image.open(io.BytesIO(png))
        image.load()
        assert image.format == "PNG"
        assert image.width == 320
        assert abs(image.height - 320 * float(box.height) / float(box.width)) <= 1
        darkest, lightest = image.convert("L").getextrema()
        assert darkest != lightest, "the page rendered as one flat colour"


@needs_soffice
async def test_two_conversions_at_once_both_succeed(private_tmp: Path) -> None:
    office = Office(concurrency=2)
    deck = three_slide_deck()
    first, second = await asyncio.gather(office.to_pdf(deck), office.to_pdf(deck))
    assert pdf_page_count(first) == pdf_page_count(second) == 3


@needs_soffice
async def test_bytes_that_are_no_deck_raise_conversion_failed(private_tmp: Path) -> None:
    # soffice prints "source file could not be loaded", exits 0 and writes nothing.
    garbage = random.Random(7).randbytes(4096)
    with pytest.raises(ConversionFailed, match=r"wrote no PDF.*could not be loaded"):
        await Office(timeout=60).to_pdf(garbage)
    assert processes_naming(private_tmp) == []


@needs_soffice
async def test_an_empty_deck_is_refused_rather_than_exported_blank() -> None:
    with pytest.raises(ConversionFailed, match="empty"):
        await Office().to_pdf(b"")


@needs_soffice
async def test_a_timeout_raises_and_leaves_no_soffice_behind(private_tmp: Path) -> None:
    with pytest.raises(ConversionFailed, match=r"timed out after 0\.01 s"):
        await Office(timeout=0.01).to_pdf(three_slide_deck())
    assert processes_naming(private_tmp) == []


@needs_soffice
async def test_cancelling_kills_a_running_soffice_and_the_next_conversion_works(
    private_tmp: Path,
) -> None:
    office = Office()
    task = asyncio.create_task(office.to_pdf(three_slide_deck()))

    def soffice_started() -> bool:
        assert not task.done(), "the conversion ended before soffice.bin was seen"
        return any(p.name() == "soffice.bin" for p in processes_naming(private_tmp))

    await eventually_async(soffice_started, timeout=30, what="soffice.bin to start", interval=0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert processes_naming(private_tmp) == []
    assert pdf_page_count(await office.to_pdf(three_slide_deck())) == 3


async def test_a_missing_binary_is_reported_and_refused() -> None:
    office = Office(binary="/nonexistent/soffice")
    reason = office.unavailable()
    assert reason is not None and "/nonexistent/soffice" in reason
    with pytest.raises(OfficeUnavailable) as raised:
        await office.to_pdf(three_slide_deck())
    assert raised.value.reason == reason


async def test_without_soffice_on_path_the_reason_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    office = Office()
    assert office.unavailable() is not None
    assert "apt-get install libreoffice-impress" in str(office.unavailable())
    with pytest.raises(OfficeUnavailable, match="not installed"):
        await office.to_pdf(three_slide_deck())


def test_bytes_that_are_no_pdf_raise_conversion_failed() -> None:
    with pytest.raises(ConversionFailed, match="cannot be read"):
        pdf_page_images(b"%PDF-1.7 not really")
    with pytest.raises(ConversionFailed, match="cannot be read"):
        pdf_page_count(b"")
