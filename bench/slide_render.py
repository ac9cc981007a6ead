"""Rendering a deck to PPTX with python-pptx (`render_deck`), in one process.

The deck has `--slides` slides (default 20) in a realistic mix: a title slide, bullet
slides, two-column slides, three native charts (column, line, pie), an image slide
(a 1280 x 720 PNG) and a closing slide, each with speaker notes. It is rendered once
to warm up (that run also builds and caches the template), then `--runs` times;
printed: the warm-up, the median and p95 of the runs in ms, and the PPTX's size.
What a deck change costs before its file is stored, as `DeckEditor` renders every
version from scratch. Target: under 1 s for a 20-slide deck.

    python -m bench.slide_render [--slides 20] [--runs 20]
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import time
from datetime import UTC, datetime

from PIL import Image

from adapters.slides.render import render_deck
from domain.decks import LAYOUTS, Chart, Deck, Slide

IMAGE = "photo"
POINTS = (
    "Revenue grew 12% against the plan, led by the northern region",
    "Costs held flat while two new regions opened",
    "Churn fell below 3% for the first time",
    "Support waits grew; hiring is under way",
)


def chart(kind: str) -> Chart:
    series = [{"name": "Revenue", "values": [12.5, 14.1, 15.8, 17.2]}]
    if kind != "pie":
        series.append({"name": "Costs", "values": [9.8, 10.2, 10.1, 10.4]})
    return Chart.of({"type": kind, "categories": ["Q1", "Q2", "Q3", "Q4"], "series": series})


def middle(number: int) -> Slide:
    """Slide `number` of the middle of the deck: charts at 4, 8 and 12, the image at 15,
    two columns every fifth slide, bullets otherwise."""
    notes = f"Speaker notes for slide {number}: the point to make, and the numbers behind it."
    charts = {4: "column", 8: "line", 12: "pie"}
    if number in charts:
        kind = charts[number]
        return Slide(f"{kind.title()} chart", POINTS[:1], layout="chart", chart=chart(kind))
    if number == 15:
        return Slide("The new plant", body="Opened in March", layout="image", image=IMAGE)
    if number % 5 == 0:
        return Slide(f"Compare {number}", POINTS, body="Where we stand", layout="two_column")
    return Slide(f"Findings {number}", POINTS, notes=notes)


def build(slides: int) -> Deck:
    first = Slide("Quarterly review", body="Board meeting, Q4", layout="title", notes="Welcome")
    last = Slide("Next steps", ("Hire two engineers", "Ship the new plan"), layout="closing")
    body = [middle(n) for n in range(2, slides)]
    return Deck(1, "Quarterly review", "business", (first, *body, last)[:slides], created_at=1)


def photo() -> bytes:
    buffer = io.BytesIO()
    Image.linear_gradient("L").resize((1280, 720)).convert("RGB").save(buffer, "PNG")
    return buffer.getvalue()


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--slides", type=int, default=20)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    if args.slides < 2 or args.runs < 1:
        parser.error("--slides must be at least 2 (a title and a closing slide), --runs 1")
    deck, images = build(args.slides), {IMAGE: photo()}
    print(
        f"slide rendering with python-pptx; cores: {os.cpu_count() or 1} (load average "
        f"{os.getloadavg()[0]:.2f} at start), {datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    )
    kinds = {layout: sum(s.layout == layout for s in deck.slides) for layout in LAYOUTS}
    print("  deck: " + ", ".join(f"{n} {layout}" for layout, n in kinds.items() if n))
    started = time.perf_counter()
    data = render_deck(deck, images)
    warm_up = (time.perf_counter() - started) * 1000
    took = []
    for _ in range(args.runs):
        started = time.perf_counter()
        render_deck(deck, images)
        took.append((time.perf_counter() - started) * 1000)
    print(f"  warm-up (builds the template): {warm_up:.0f} ms")
    print(
        f"  render_deck, {args.slides} slides: median {statistics.median(took):.0f} ms, "
        f"p95 {p95(took):.0f} ms over {args.runs} runs; PPTX {len(data):,} bytes"
    )


if __name__ == "__main__":
    main()
