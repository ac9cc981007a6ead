"""Where a slide's text goes on the page, how large it can be, and how a slide too long
for its page is split over continuation slides.

The renderer (`adapters/slides/render.py`) draws every text box at the `Box` given
here and sets its font size with `font_size_for` (the estimate of `text_fit.py`), so
what fits here is what is drawn. Text that does not fit at a box's smallest size is
never cut: `split_to_fit` moves it to continuation slides titled "<title> (1/2)",
"<title> (2/2)", breaking a paragraph or bullet too long for one page at sentences,
then words. Geometry is in inches on a 13.333 x 7.5 in (16:9) slide.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from itertools import zip_longest

from domain.decks import MAX_TITLE_CHARS, Slide
from domain.text_fit import LINE_HEIGHT_EM, PARAGRAPH_GAP_EM, line_count
from domain.text_fit import Para as Para
from domain.text_fit import font_size_for as font_size_for

SLIDE_WIDTH_IN, SLIDE_HEIGHT_IN = 40 / 3, 7.5  # 13.333 in
INSET_X_IN, INSET_Y_IN = 0.1, 0.05  # each text box's inner margins, left/right and top/bottom


@dataclass(frozen=True)
class Area:
    """A rectangle on the slide, in inches from its top-left corner."""

    left: float
    top: float
    width: float
    height: float


@dataclass(frozen=True)
class Box(Area):
    """A text box: its place, and the font sizes (points) its text may have."""

    max_pt: int
    min_pt: int

    def size_for(self, paragraphs: Sequence[str | Para]) -> int | None:
        width, height = self.width - 2 * INSET_X_IN, self.height - 2 * INSET_Y_IN
        return font_size_for(paragraphs, width, height, max_pt=self.max_pt, min_pt=self.min_pt)


_CONTENT_W = SLIDE_WIDTH_IN - 1.5
TITLE = Box(0.75, 0.4, _CONTENT_W, 1.1, max_pt=36, min_pt=18)
BODY = Box(0.75, 1.75, _CONTENT_W, 5.15, max_pt=28, min_pt=14)
LEFT_COLUMN = Box(0.75, 1.75, 5.667, 5.15, max_pt=24, min_pt=12)
RIGHT_COLUMN = Box(6.917, 1.75, 5.667, 5.15, max_pt=24, min_pt=12)
SIDE = Box(9.083, 1.75, 3.5, 5.15, max_pt=20, min_pt=11)  # text beside a chart or image
CAPTION = Box(0.75, 6.0, _CONTENT_W, 0.9, max_pt=18, min_pt=11)  # text under an image
COVER_TITLE = Box(0.75, 2.2, _CONTENT_W, 1.9, max_pt=44, min_pt=24)
COVER_SUBTITLE = Box(0.75, 4.3, _CONTENT_W, 2.2, max_pt=24, min_pt=14)
FULL = Area(0.75, 1.75, _CONTENT_W, 5.15)  # a chart or image alone
BESIDE_SIDE = Area(0.75, 1.75, 8.083, 5.15)  # a chart or image left of `SIDE`
ABOVE_CAPTION = Area(0.75, 1.75, _CONTENT_W, 4.1)  # an image over `CAPTION`


def title_box(slide: Slide) -> Box:
    return COVER_TITLE if slide.layout == "title" else TITLE


def flow(slide: Slide) -> tuple[Para, ...]:
    """The slide's text in reading order: its body's paragraphs, then its bullets."""
    body = tuple(Para(line.strip()) for line in slide.body.splitlines() if line.strip())
    return body + tuple(Para(b, bullet=True) for b in slide.bullets)


def text_box(slide: Slide) -> Box:
    """Where `flow(slide)` goes (the two-column layout uses `columns` instead)."""
    match slide.layout:
        case "title":
            return COVER_SUBTITLE
        case "chart":
            return SIDE
        case "image":
            return CAPTION if CAPTION.size_for(flow(slide)) is not None else SIDE
        case _:
            return BODY


def columns(slide: Slide) -> tuple[tuple[Para, ...], tuple[Para, ...]]:
    """The two columns' text: the body left and the bullets right when there are both,
    else the paragraphs shared out so the columns are as even in height as can be."""
    paras = _pieces(list(flow(slide)), LEFT_COLUMN)
    if slide.body and slide.bullets:
        return tuple(p for p in paras if not p.bullet), tuple(p for p in paras if p.bullet)
    cut = _even_cut([_item_pt(p, LEFT_COLUMN) for p in paras])
    return tuple(paras[:cut]), tuple(paras[cut:])


def split_to_fit(slide: Slide) -> list[Slide]:
    """[slide] if its text fits at the smallest sizes, else its continuation slides,
    which together say all it said (notes stay on the first)."""
    parts = _parts(slide)
    if len(parts) <= 1:
        return [slide]
    count = len(parts)
    return [
        replace(
            slide,
            title=_numbered(slide.title, number, count),
            body="\n".join(p.text for p in part if not p.bullet),
            bullets=tuple(p.text for p in part if p.bullet),
            notes=slide.notes if number == 1 else "",
        )
        for number, part in enumerate(parts, 1)
    ]


def _parts(slide: Slide) -> list[list[Para]]:
    paras = list(flow(slide))
    if slide.layout != "two_column":
        box = text_box(slide)
        return _pack(_pieces(paras, box), box, _fits_stacked)
    if slide.body and slide.bullets:
        left, right = columns(slide)
        body = _pack(list(left), LEFT_COLUMN, _fits_stacked)
        bullets = _pack(list(right), RIGHT_COLUMN, _fits_stacked)
        return [[*b, *r] for b, r in zip_longest(body, bullets, fillvalue=list[Para]())]
    return _pack(_pieces(paras, LEFT_COLUMN), LEFT_COLUMN, _fits_side_by_side)


Fits = Callable[[Sequence[float], float], bool]


def _fits_stacked(heights: Sequence[float], capacity: float) -> bool:
    return sum(heights) <= capacity + 1e-6


def _fits_side_by_side(heights: Sequence[float], capacity: float) -> bool:
    cut = _even_cut(heights)
    return max(sum(heights[:cut]), sum(heights[cut:])) <= capacity + 1e-6


def _pack(paras: list[Para], box: Box, fits: Fits) -> list[list[Para]]:
    """`paras` (each fitting `box` alone) over the fewest pages, filled about evenly."""
    heights = [_item_pt(p, box) for p in paras]
    capacity = _capacity_pt(box)
    if fits(heights, capacity):
        return [paras]
    full = _greedy(heights, capacity, fits)
    starts = _even(heights, capacity, fits, len(full)) or full
    return [paras[a:b] for a, b in zip(starts, [*starts[1:], len(paras)], strict=True)]


def _even(heights: Sequence[float], capacity: float, fits: Fits, count: int) -> list[int] | None:
    """Where each of `count` pages starts when each takes its share of what is left (a
    paragraph going where most of it falls); None if the pages would not fit."""
    starts, i = [], 0
    for page in range(count):
        starts.append(i)
        share, taken, j = sum(heights[i:]) / (count - page), 0.0, i
        while j < len(heights) and (page == count - 1 or taken + heights[j] / 2 <= share):
            taken, j = taken + heights[j], j + 1
        if j == i or not fits(heights[i:j], capacity):
            return None
        i = j
    return starts


def _greedy(heights: Sequence[float], capacity: float, fits: Fits) -> list[int]:
    """Where each page starts when each takes as many paragraphs as fit (at least one)."""
    starts, i = [], 0
    while i < len(heights):
        starts.append(i)
        j = i + 1
        while j < len(heights) and fits(heights[i : j + 1], capacity):
            j += 1
        i = j
    return starts


def _pieces(paras: list[Para], box: Box) -> list[Para]:
    """`paras`, each too long for `box` alone broken into paragraphs that fit."""
    capacity = _capacity_pt(box)
    out: list[Para] = []
    for p in paras:
        height = _item_pt(p, box)
        if height <= capacity + 1e-6:
            out.append(p)
            continue
        pieces = _break(p.text, _within(box, p.bullet, capacity))
        line = LINE_HEIGHT_EM * box.min_pt
        for slack in (1, 2, 4):  # pieces about as long as each other, if as few
            limit = min(capacity, height / len(pieces) + slack * line)
            even = _break(p.text, _within(box, p.bullet, limit))
            if len(even) == len(pieces):
                pieces = even
                break
        out += [Para(piece, p.bullet) for piece in pieces]
    return out


def _within(box: Box, bullet: bool, limit: float) -> Callable[[str], bool]:
    """Whether a paragraph of this text is at most `limit` high in `box`."""
    return lambda text: _item_pt(Para(text, bullet), box) <= limit + 1e-6


_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+|(?<=[\u3002\uff01\uff1f\uff1b])")  # CJK full stops
_LEVELS: tuple[tuple[Callable[[str], list[str]], str], ...] = (
    (lambda text: [s for s in _SENTENCE_END.split(text) if s.strip()], " "),
    (str.split, " "),
    (list, ""),
)


def _break(text: str, fits: Callable[[str], bool], level: int = 0) -> list[str]:
    """`text` in pieces that each fit: whole sentences, else words, else characters."""
    split, glue = _LEVELS[level]
    units, pieces, i = split(text), list[str](), 0
    while i < len(units):
        n = _fitting(units[i:], glue, fits)
        if n == 0 and level < len(_LEVELS) - 1:
            pieces += _break(units[i], fits, level + 1)
            n = 1
        else:
            pieces.append(glue.join(units[i : i + max(n, 1)]))
        i += max(n, 1)
    return pieces


def _fitting(units: Sequence[str], glue: str, fits: Callable[[str], bool]) -> int:
    """How many of the first `units`, joined by `glue`, fit together (by doubling, then
    bisecting: a prefix that fits has fitting prefixes)."""

    def ok(n: int) -> bool:
        return fits(glue.join(units[:n]))

    low, high = 0, 1
    while high <= len(units) and ok(high):
        low, high = high, high * 2
    high = min(high, len(units) + 1)  # ok(high) is false, or past the end
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if ok(mid) else (low, mid)
    return low


def _even_cut(heights: Sequence[float]) -> int:
    """How many paragraphs go left so the taller column is as short as can be (ties:
    the left one takes more)."""
    total, best, best_cut, above = sum(heights), math.inf, 0, 0.0
    for cut in range(len(heights) + 1):
        tallest = max(above, total - above)
        if tallest <= best + 1e-9:
            best, best_cut = tallest, cut
        if cut < len(heights):
            above += heights[cut]
    return best_cut


def _numbered(title: str, number: int, count: int) -> str:
    suffix = f" ({number}/{count})"
    room = MAX_TITLE_CHARS - len(suffix)
    return (title if len(title) <= room else title[: room - 1].rstrip() + "…") + suffix


def _capacity_pt(box: Box) -> float:
    """What a box holds at its smallest size, a paragraph gap added so that each
    paragraph can count the gap before it (`_item_pt`)."""
    return (box.height - 2 * INSET_Y_IN) * 72 + PARAGRAPH_GAP_EM * box.min_pt


def _item_pt(p: Para, box: Box) -> float:
    lines = line_count(p, (box.width - 2 * INSET_X_IN) * 72 / box.min_pt)
    return (lines * LINE_HEIGHT_EM + PARAGRAPH_GAP_EM) * box.min_pt
