"""The look of each deck template: colours, fonts and accent shapes, as data.

`templates.py` writes these into a template's theme and slide master (so slides a
user adds in PowerPoint look the same); `render.py` also sets them on every run of
text and chart it draws, so that no viewer has to resolve theme references. Cover
slides (the `title` and `closing` layouts) have a background of their own; title
slides also swap the master's accents for their own. Accents keep out of the text
boxes of `domain/slide_fit.py`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from domain.decks import Template

Shape = Literal["rect", "ellipse"]  # DrawingML preset geometry names


@dataclass(frozen=True)
class Accent:
    """A filled shape without outline, in inches (it may run off the slide's edge)."""

    shape: Shape
    left: float
    top: float
    width: float
    height: float
    color: str  # RRGGBB


@dataclass(frozen=True)
class Style:
    name: Template
    background: str
    title_color: str
    text_color: str
    muted_color: str  # captions, gridlines
    bullet_color: str
    title_font: str
    body_font: str
    title_bold: bool
    palette: tuple[str, str, str, str, str, str]  # theme accents 1-6, the charts' colours
    accents: tuple[Accent, ...]  # on the slide master: every content slide
    cover_background: str
    cover_title_color: str
    cover_text_color: str
    cover_accents: tuple[Accent, ...]  # on title slides, which hide the master's
    dark: bool = False  # light text on a dark background: the master's colour map swaps


BUSINESS = Style(
    name="business",
    background="FFFFFF",
    title_color="1F3864",
    text_color="262626",
    muted_color="7F7F7F",
    bullet_color="2E75B6",
    title_font="Calibri",
    body_font="Calibri",
    title_bold=True,
    palette=("1F4E79", "2E86C1", "F39C12", "27AE60", "8E44AD", "7F8C8D"),
    accents=(
        Accent("rect", 0.0, 0.0, 0.28, 7.5, "1F4E79"),
        Accent("rect", 0.75, 1.52, 11.833, 0.03, "BFBFBF"),
    ),
    cover_background="1F3864",
    cover_title_color="FFFFFF",
    cover_text_color="D6E4F0",
    cover_accents=(
        Accent("rect", 0.75, 1.95, 1.6, 0.1, "F39C12"),
        Accent("rect", 0.0, 7.2, 13.333, 0.3, "2E75B6"),
    ),
)

MINIMAL = Style(
    name="minimal",
    background="FFFFFF",
    title_color="111111",
    text_color="333333",
    muted_color="8C8C8C",
    bullet_color="8C8C8C",
    title_font="Arial",
    body_font="Arial",
    title_bold=False,
    palette=("333333", "C8102E", "8C8C8C", "5B5B5B", "BFBFBF", "E08A96"),
    accents=(Accent("rect", 0.75, 1.5, 0.9, 0.04, "111111"),),
    cover_background="FFFFFF",
    cover_title_color="111111",
    cover_text_color="5B5B5B",
    cover_accents=(Accent("rect", 0.75, 2.0, 0.9, 0.04, "C8102E"),),
)

CREATIVE = Style(
    name="creative",
    background="1B1A2E",
    title_color="FFD166",
    text_color="F2F2F2",
    muted_color="B8B5D0",
    bullet_color="4ECDC4",
    title_font="Georgia",
    body_font="Trebuchet MS",
    title_bold=True,
    palette=("FF6B6B", "4ECDC4", "FFD166", "9B5DE5", "F15BB5", "00BBF9"),
    accents=(
        Accent("rect", 0.0, 7.15, 13.333, 0.35, "4ECDC4"),
        Accent("ellipse", 12.73, -0.5, 1.1, 1.1, "FF6B6B"),
    ),
    cover_background="2B1B4E",
    cover_title_color="FFFFFF",
    cover_text_color="E0DCF5",
    cover_accents=(
        Accent("ellipse", 10.6, -2.6, 4.4, 4.4, "FF6B6B"),
        Accent("ellipse", -1.2, 6.6, 2.6, 2.6, "9B5DE5"),
        Accent("rect", 0.75, 1.95, 1.2, 0.1, "FFD166"),
    ),
    dark=True,
)

STYLES: dict[Template, Style] = {s.name: s for s in (BUSINESS, MINIMAL, CREATIVE)}
