"""Slide decks as data: a deck is a title, a template and a list of slides.

A deck lives in its session's log: it is created with its first slides and then
changed one step at a time (a slide added, rewritten, removed, the slides reordered,
the template changed). Every version of a deck is the fold of those changes up to a
point, so any version can be rendered again from the log alone. The values here check
what they hold (a slide needs a title; chart values are numbers) and convert to and
from the JSON shape the events are stored in.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal, cast

from domain.errors import InvalidCommand

Layout = Literal["title", "bullets", "two_column", "chart", "image", "closing"]
ChartType = Literal["bar", "column", "line", "pie"]
Template = Literal["business", "minimal", "creative"]

LAYOUTS: tuple[Layout, ...] = ("title", "bullets", "two_column", "chart", "image", "closing")
CHART_TYPES: tuple[ChartType, ...] = ("bar", "column", "line", "pie")
TEMPLATES: tuple[Template, ...] = ("business", "minimal", "creative")
PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
MAX_SLIDES = 200
MAX_TITLE_CHARS = 200
MAX_BULLETS = 40
MAX_TEXT_CHARS = 20_000


@dataclass(frozen=True)
class ChartSeries:
    name: str
    values: tuple[float, ...]

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "values": list(self.values)}


@dataclass(frozen=True)
class Chart:
    """A native chart's data: one value per category in each series."""

    type: ChartType
    categories: tuple[str, ...]
    series: tuple[ChartSeries, ...]

    @classmethod
    def of(cls, raw: object) -> Chart:
        if not isinstance(raw, dict):
            raise InvalidCommand("a chart must be an object {type, categories, series}")
        kind = raw.get("type", "column")
        if kind not in CHART_TYPES:
            raise InvalidCommand(f"chart type must be one of {', '.join(CHART_TYPES)}")
        categories = _strings(raw.get("categories"), "chart categories")
        if not categories:
            raise InvalidCommand("a chart needs at least one category")
        series_raw = raw.get("series")
        if not isinstance(series_raw, list) or not series_raw:
            raise InvalidCommand("a chart needs at least one series {name, values}")
        series = tuple(_series(s, len(categories)) for s in series_raw)
        if kind == "pie" and len(series) != 1:
            raise InvalidCommand("a pie chart has exactly one series")
        return cls(cast(ChartType, kind), categories, series)

    def to_json(self) -> dict[str, object]:
        return {
            "type": self.type,
            "categories": list(self.categories),
            "series": [s.to_json() for s in self.series],
        }


@dataclass(frozen=True)
class Slide:
    """One slide: a title, bullets or body text, speaker notes, a layout, and for the
    chart and image layouts their chart data or image (an artifact id of the session)."""

    title: str
    bullets: tuple[str, ...] = ()
    body: str = ""
    notes: str = ""
    layout: Layout = "bullets"
    chart: Chart | None = None
    image: str | None = None

    @classmethod
    def of(cls, raw: object) -> Slide:
        """From its JSON shape (what a tool call or a stored event holds), checked."""
        if not isinstance(raw, dict):
            raise InvalidCommand("a slide must be an object with a title")
        title = " ".join(str(raw.get("title") or "").split())
        if not title:
            raise InvalidCommand("every slide needs a title")
        if len(title) > MAX_TITLE_CHARS:
            raise InvalidCommand(f"a slide title has at most {MAX_TITLE_CHARS} characters")
        bullets = tuple(b for b in _strings(raw.get("bullets"), "bullets") if b)
        if len(bullets) > MAX_BULLETS:
            raise InvalidCommand(f"a slide has at most {MAX_BULLETS} bullets")
        body, notes = _text(raw.get("body"), "body"), _text(raw.get("notes"), "notes")
        chart = None if raw.get("chart") is None else Chart.of(raw["chart"])
        image = raw.get("image")
        image = None if image is None or not str(image).strip() else str(image).strip()
        layout = raw.get("layout") or _default_layout(chart, image)
        if layout not in LAYOUTS:
            raise InvalidCommand(f"layout must be one of {', '.join(LAYOUTS)}")
        if layout == "chart" and chart is None:
            raise InvalidCommand(f"slide {title!r} has the chart layout but no chart data")
        if layout == "image" and image is None:
            raise InvalidCommand(f"slide {title!r} has the image layout but no image")
        return cls(title, bullets, body, notes, cast(Layout, layout), chart, image)

    def to_json(self) -> dict[str, object]:
        raw: dict[str, object] = {"title": self.title, "layout": self.layout}
        if self.bullets:
            raw["bullets"] = list(self.bullets)
        if self.body:
            raw["body"] = self.body
        if self.notes:
            raw["notes"] = self.notes
        if self.chart is not None:
            raw["chart"] = self.chart.to_json()
        if self.image is not None:
            raw["image"] = self.image
        return raw

    def text(self) -> str:
        """What the slide says, as plain text (a preview's `content`)."""
        lines = [self.title, *(f"- {b}" for b in self.bullets)]
        lines += [self.body] if self.body else []
        if self.chart is not None:
            categories = self.chart.categories
            for s in self.chart.series:
                pairs = zip(categories, s.values, strict=True)
                lines.append(f"{s.name}: " + ", ".join(f"{c}: {_number(v)}" for c, v in pairs))
        return "\n".join(lines)


@dataclass(frozen=True)
class Deck:
    """One deck of a session, as of some version of its log.

    `number` counts the session's decks from 1 (what tools name a deck by, the same in a
    fork); `created_at` is the session version of its creation (its artifact id comes
    from it); `version` counts its changes from 1 (the artifact's version)."""

    number: int
    title: str
    template: Template
    slides: tuple[Slide, ...]
    created_at: int
    version: int = 1
    name: str = ""  # its file name

    def slide(self, index: int) -> Slide:
        return self.slides[self.check_index(index) - 1]

    def check_index(self, index: int, *, insert: bool = False) -> int:
        """`index` (from 1) if the deck has such a slide (or, to insert, such a place)."""
        last = len(self.slides) + (1 if insert else 0)
        if not 1 <= index <= last:
            raise InvalidCommand(
                f"deck {self.number} has {len(self.slides)} slides: index {index} is out of "
                f"range (1-{last})"
            )
        return index


def check_template(template: object) -> Template:
    if template not in TEMPLATES:
        raise InvalidCommand(f"unknown template {template!r}: one of {', '.join(TEMPLATES)}")
    return template


def check_slides(slides: Sequence[Slide], *, at_least: int = 1) -> tuple[Slide, ...]:
    if len(slides) < at_least:
        raise InvalidCommand("a deck needs at least one slide (an empty outline)")
    if len(slides) > MAX_SLIDES:
        raise InvalidCommand(f"a deck has at most {MAX_SLIDES} slides")
    return tuple(slides)


def created(
    number: int, title: str, template: object, slides: Sequence[Slide], at: int, name: str
) -> Deck:
    title = " ".join(title.split())
    if not title:
        raise InvalidCommand("a deck needs a title")
    return Deck(number, title, check_template(template), check_slides(slides), at, 1, name)


def with_slide_added(deck: Deck, index: int, slide: Slide) -> Deck:
    i = deck.check_index(index, insert=True)
    slides = check_slides((*deck.slides[: i - 1], slide, *deck.slides[i - 1 :]))
    return replace(deck, slides=slides, version=deck.version + 1)


def with_slide_rewritten(deck: Deck, index: int, slide: Slide) -> Deck:
    i = deck.check_index(index)
    slides = (*deck.slides[: i - 1], slide, *deck.slides[i:])
    return replace(deck, slides=slides, version=deck.version + 1)


def with_slide_removed(deck: Deck, index: int) -> Deck:
    i = deck.check_index(index)
    if len(deck.slides) == 1:
        raise InvalidCommand(f"deck {deck.number} has one slide left: it cannot be removed")
    slides = (*deck.slides[: i - 1], *deck.slides[i:])
    return replace(deck, slides=slides, version=deck.version + 1)


def with_slides_reordered(deck: Deck, order: Sequence[int]) -> Deck:
    """`order` lists every slide's current index (from 1) once, in the new order."""
    if sorted(order) != list(range(1, len(deck.slides) + 1)):
        raise InvalidCommand(
            f"the order must list each of deck {deck.number}'s slides 1-{len(deck.slides)} "
            "exactly once"
        )
    slides = tuple(deck.slides[i - 1] for i in order)
    return replace(deck, slides=slides, version=deck.version + 1)


def with_template(deck: Deck, template: object) -> Deck:
    return replace(deck, template=check_template(template), version=deck.version + 1)


def _default_layout(chart: Chart | None, image: str | None) -> Layout:
    return "chart" if chart is not None else "image" if image is not None else "bullets"


def _strings(raw: object, what: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(s, str | int | float) for s in raw):
        raise InvalidCommand(f"{what} must be a list of strings")
    texts = tuple(" ".join(str(s).split()) for s in raw)
    if any(len(t) > MAX_TEXT_CHARS for t in texts):
        raise InvalidCommand(f"each of the {what} has at most {MAX_TEXT_CHARS} characters")
    return texts


def _text(raw: object, what: str) -> str:
    if raw is None:
        return ""
    if not isinstance(raw, str):
        raise InvalidCommand(f"a slide's {what} must be a string")
    if len(raw) > MAX_TEXT_CHARS:
        raise InvalidCommand(f"a slide's {what} has at most {MAX_TEXT_CHARS} characters")
    return raw.strip()


def _series(raw: object, categories: int) -> ChartSeries:
    if not isinstance(raw, dict):
        raise InvalidCommand("each chart series must be an object {name, values}")
    name = " ".join(str(raw.get("name") or "").split()) or "Series"
    values = raw.get("values")
    if not isinstance(values, list) or len(values) != categories:
        raise InvalidCommand(
            f"chart series {name!r} needs one value per category ({categories} values)"
        )
    numbers: list[float] = []
    for v in values:
        # bool is an int in Python, and never a figure
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise InvalidCommand(f"chart series {name!r} has a value that is not a number: {v!r}")
        numbers.append(float(v))
    return ChartSeries(name, tuple(numbers))


def _number(v: float) -> str:
    return str(int(v)) if v.is_integer() else f"{v:g}"
