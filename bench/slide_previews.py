"""Slide previews: a deck to PDF through LibreOffice, and the PDF's pages to PNGs.

The deck is built with python-pptx: a title slide, then slides with a title and four
bullets, and every seventh a native chart (column, then line; CategoryChartData).
Timed separately, each `--runs` times in one process: `Office.to_pdf` (one headless
soffice per call; the first run is the cold start, which also creates the LibreOffice
profile, then the median of the rest, which reuse it), `Office.to_pdf` with a new
`Office` (so a new profile) for every call, for comparison, and `pdf_page_images` at
640 px wide (first run, then the median of the rest).

    python -m bench.slide_previews [--slides 20] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TypeVar

from pptx import Presentation
from pptx.chart.data import CategoryChartData
from pptx.enum.chart import XL_CHART_TYPE
from pptx.presentation import Presentation as Deck
from pptx.util import Inches

from adapters.slides.office import Office, pdf_page_count, pdf_page_images

WIDTH = 640
T = TypeVar("T")
CHARTS = (XL_CHART_TYPE.COLUMN_CLUSTERED, XL_CHART_TYPE.LINE_MARKERS)


def build_deck(slides: int) -> bytes:
    """A deck of `slides` slides: a title slide, bullets, and a chart every seventh."""
    deck = Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[0])
    assert first.shapes.title is not None
    first.shapes.title.text = "Quarterly review"
    first.placeholders[1].text = "Built by bench.slide_previews"
    for number in range(2, slides + 1):
        if number % 7 == 0:
            add_chart_slide(deck, number, CHARTS[(number // 7 - 1) % len(CHARTS)])
            continue
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        assert slide.shapes.title is not None
        slide.shapes.title.text = f"Slide {number}: findings"
        body = slide.placeholders[1].text_frame
        body.text = f"Revenue grew {number}% against the plan"
        for point in ("Costs held flat", "Two new regions opened", "Churn fell below 3%"):
            body.add_paragraph().text = point
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


def add_chart_slide(deck: Deck, number: int, kind: XL_CHART_TYPE) -> None:
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    assert slide.shapes.title is not None
    slide.shapes.title.text = f"Slide {number}: by quarter"
    # python-pptx's chart data classes carry no type hints.
    data = CategoryChartData()
    data.categories = ["Q1", "Q2", "Q3", "Q4"]
    data.add_series("Revenue", (12.5, 14.1, 15.8, 17.2))
    data.add_series("Costs", (9.8, 10.2, 10.1, 10.4))
    slide.shapes.add_chart(kind, Inches(1), Inches(1.6), Inches(8), Inches(5.4), data)


async def ms(call: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await call()
    return (time.perf_counter() - started) * 1000


async def measure(slides: int, runs: int) -> None:
    deck = build_deck(slides)
    office = Office()
    if (reason := office.unavailable()) is not None:
        sys.exit(reason)
    print(f"  deck: {slides} slides, {len(deck):,} bytes PPTX; soffice: {office.binary}")
    pdfs: list[bytes] = []
    cold = await ms(lambda: keep(pdfs, office.to_pdf(deck)))
    # Alternated, so that a change in the machine's load hits both alike.
    reused, fresh = [], []
    for _ in range(runs - 1):
        reused.append(await ms(lambda: office.to_pdf(deck)))
        fresh.append(await ms(lambda: Office().to_pdf(deck)))
    pdf, pngs = pdfs[0], list[list[bytes]]()
    render = [
        await ms(lambda: keep(pngs, asyncio.to_thread(pdf_page_images, pdf, width=WIDTH)))
        for _ in range(runs)
    ]
    print(f"  {'step':<48} {'ms':>7}")
    for name, took in (
        ("to_pdf, cold start (first run, new profile)", cold),
        ("to_pdf, warm, profile reused (median)", statistics.median(reused)),
        ("to_pdf, warm, new profile each call (median)", statistics.median(fresh)),
        (f"pdf_page_images at {WIDTH} px wide, first run", render[0]),
        (f"pdf_page_images at {WIDTH} px wide (median)", statistics.median(render[1:])),
    ):
        print(f"  {name:<48} {took:7.0f}")
    print(
        f"  pages: {pdf_page_count(pdf)}, PDF {len(pdf):,} bytes, "
        f"PNGs {sum(map(len, pngs[0])):,} bytes total; medians of {runs - 1} runs"
    )


async def keep(into: list[T], result: Awaitable[T]) -> None:
    """Await `result` and keep it, so that a timed call's output can be used after."""
    into.append(await result)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--slides", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if args.runs < 2 or args.slides < 1:
        parser.error("--runs must be at least 2 (a cold run and a warm one), --slides at least 1")
    print(
        f"slide previews through LibreOffice and PDFium; cores: {os.cpu_count() or 1}, "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    )
    asyncio.run(measure(args.slides, args.runs))


if __name__ == "__main__":
    main()
