"""How much room text takes, estimated without font files.

A Latin glyph is about 0.5 em wide (a capital 0.6 em, a space 0.5 em), a wide (CJK)
character 1 em; lines wrap at spaces and between wide characters, a word longer than
a line is broken as PowerPoint does; a line is `LINE_HEIGHT_EM` high and paragraphs
are `PARAGRAPH_GAP_EM` apart; a bullet's lines all start `BULLET_INDENT_EM` in. The
renderer sets these spacings exactly, so only glyph widths are estimates.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

LINE_HEIGHT_EM, PARAGRAPH_GAP_EM, BULLET_INDENT_EM = 1.2, 0.3, 1.0
_SPACE_EM, _LATIN_EM, _CAPITAL_EM, _WIDE_EM = 0.5, 0.5, 0.6, 1.0


@dataclass(frozen=True)
class Para:
    """A paragraph of a text box, or a bullet."""

    text: str
    bullet: bool = False


def font_size_for(
    paragraphs: Sequence[str | Para], width_in: float, height_in: float, *, max_pt: int, min_pt: int
) -> int | None:
    """The largest whole size in [min_pt, max_pt] at which the paragraphs, wrapped at
    words, fit `width_in` x `height_in`; None when even `min_pt` is too large."""
    paras = [p if isinstance(p, Para) else Para(p) for p in paragraphs]
    limit = height_in * 72

    def fits(size: int) -> bool:
        return height_pt(paras, width_in, size) <= limit + 1e-6

    if not fits(min_pt):
        return None
    low, high = min_pt, max_pt  # fits(low); fewer lines as the size shrinks, so bisect
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if fits(mid) else (low, mid - 1)
    return low


def height_pt(paras: Sequence[Para], width_in: float, size: int) -> float:
    """The height of `paras` set at `size` points in a box `width_in` wide."""
    if not paras:
        return 0.0
    lines = sum(line_count(p, width_in * 72 / size) for p in paras)
    return (lines * LINE_HEIGHT_EM + (len(paras) - 1) * PARAGRAPH_GAP_EM) * size


def line_count(p: Para, width_em: float) -> int:
    """How many lines `p` wraps to in a box `width_em` wide."""
    room = max(width_em - (BULLET_INDENT_EM if p.bullet else 0.0), _WIDE_EM)
    lines, x = 1, 0.0
    for width, gap in _tokens(p.text):
        if x > 0 and x + gap + width <= room:
            x += gap + width
            continue
        if x > 0:
            lines += 1
        overflow = max(math.ceil(width / room) - 1, 0)
        lines, x = lines + overflow, width - overflow * room
    return lines


@lru_cache(maxsize=4096)
def _tokens(text: str) -> tuple[tuple[float, float], ...]:
    """(width, space before) in em of each run that does not break: a word, or a wide
    character (CJK text breaks between any two)."""
    tokens: list[tuple[float, float]] = []
    word = gap = 0.0
    for ch in text:
        if ch.isspace() or unicodedata.east_asian_width(ch) in ("W", "F"):
            if word:
                tokens.append((word, gap))
                word = gap = 0.0
            if ch.isspace():
                gap = _SPACE_EM if tokens else 0.0
            else:
                tokens.append((_WIDE_EM, gap))
                gap = 0.0
        else:
            word += _CAPITAL_EM if ch.isupper() else _LATIN_EM
    if word:
        tokens.append((word, gap))
    return tuple(tokens)
