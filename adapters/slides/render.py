"""A deck version to PPTX bytes, from its data alone.

Every render starts from the deck's template (`build_template`) and adds each slide on
its "Title Only" layout: the title in the layout's title placeholder (so outlines and
screen readers find it), and text boxes, native charts and pictures at the places
`domain/slide_fit.py` gives, text at the size that fits. A deck is never made by
editing an earlier file, so python-pptx's trouble with removed and re-added slides
cannot arise, and the same deck renders to the same bytes (`package.saved`). Slides
should come through `split_to_fit` first; one that still does not fit is drawn at its
boxes' smallest sizes, shrink-on-overflow marked for the viewer.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import assert_never

from pptx import Presentation
from pptx.enum.text import MSO_ANCHOR
from pptx.slide import Slide as PptxSlide
from pptx.util import Emu

from adapters.slides.charts import add_chart
from adapters.slides.package import saved
from adapters.slides.styles import STYLES, Accent, Style
from adapters.slides.templates import SHAPES, build_template, fill
from adapters.slides.text import Look, add_text, emu, place, rgb, size_in, write
from domain.decks import Deck, Slide
from domain.errors import InvalidCommand
from domain.slide_fit import (
    ABOVE_CAPTION,
    BESIDE_SIDE,
    CAPTION,
    FULL,
    LEFT_COLUMN,
    RIGHT_COLUMN,
    Area,
    Para,
    columns,
    flow,
    text_box,
    title_box,
)

LAYOUT = "Title Only"
COVERS = ("title", "closing")  # drawn on the cover background


def render_deck(deck: Deck, images: Mapping[str, bytes]) -> bytes:
    """The deck as a PPTX file; `images` holds the bytes of each image slide's `image`."""
    for number, slide in enumerate(deck.slides, 1):
        if slide.layout == "image" and slide.image not in images:
            raise InvalidCommand(
                f"slide {number} ({slide.title!r}) shows image {slide.image!r}, "
                "which is not among the images given to render"
            )
    style = STYLES[deck.template]
    prs = Presentation(io.BytesIO(build_template(deck.template)))
    layout = prs.slide_layouts.get_by_name(LAYOUT)
    assert layout is not None, f"the template has no {LAYOUT!r} layout"
    for number, slide in enumerate(deck.slides, 1):
        _draw(prs.slides.add_slide(layout), slide, number, style, images)
    return saved(prs, title=deck.title, revision=deck.version)


def _draw(
    page: PptxSlide, slide: Slide, number: int, style: Style, images: Mapping[str, bytes]
) -> None:
    cover = slide.layout in COVERS
    if cover:
        _cover(page, style, accents=slide.layout == "title")
    _title(page, slide, style, cover)
    look = _body_look(style, cover)
    paras = flow(slide)
    match slide.layout:
        case "two_column":
            left, right = columns(slide)
            size = min(size_in(LEFT_COLUMN, left), size_in(RIGHT_COLUMN, right))
            add_text(page, LEFT_COLUMN, left, size, look)
            add_text(page, RIGHT_COLUMN, right, size, look)
        case "chart":
            assert slide.chart is not None  # Slide.of checks it
            add_chart(page, slide.chart, BESIDE_SIDE if paras else FULL, style)
            _flow(page, slide, paras, look)
        case "image":
            assert slide.image is not None  # Slide.of checks it
            _image(page, slide, paras, images[slide.image], number, style)
        case "title" | "bullets" | "closing":
            _flow(page, slide, paras, look)
        case _ as unknown:
            assert_never(unknown)
    notes = page.notes_slide.notes_text_frame if slide.notes else None
    if notes is not None:  # the default notes master always has its notes placeholder
        notes.text = slide.notes


def _image(
    page: PptxSlide, slide: Slide, paras: Sequence[Para], data: bytes, number: int, style: Style
) -> None:
    """The picture alone, over a caption (muted), or beside text too long for one."""
    box = text_box(slide)
    area = FULL if not paras else ABOVE_CAPTION if box == CAPTION else BESIDE_SIDE
    _picture(page, data, area, number)
    color = style.muted_color if box == CAPTION else style.text_color
    _flow(page, slide, paras, Look(style.body_font, color, style.bullet_color))


def _flow(page: PptxSlide, slide: Slide, paras: Sequence[Para], look: Look) -> None:
    if paras:
        box = text_box(slide)
        add_text(page, box, paras, size_in(box, paras), look)


def _title(page: PptxSlide, slide: Slide, style: Style, cover: bool) -> None:
    shape = page.shapes.title
    assert shape is not None, f"the {LAYOUT!r} layout has a title placeholder"
    box = title_box(slide)
    place(shape, box)
    color = style.cover_title_color if cover else style.title_color
    anchor = MSO_ANCHOR.BOTTOM if slide.layout == "title" else MSO_ANCHOR.MIDDLE
    look = Look(style.title_font, color, color, bold=style.title_bold, anchor=anchor)
    paras = [Para(slide.title)]
    write(shape.text_frame, paras, size_in(box, paras), look)


def _body_look(style: Style, cover: bool) -> Look:
    if cover:
        return Look(style.body_font, style.cover_text_color, style.cover_text_color)
    return Look(style.body_font, style.text_color, style.bullet_color)


def _cover(page: PptxSlide, style: Style, *, accents: bool) -> None:
    """The cover background; with `accents`, the cover's accents instead of the master's
    (placed for the title layout's boxes, so only there)."""
    page.background.fill.solid()
    page.background.fill.fore_color.rgb = rgb(style.cover_background)
    if not accents:
        return
    page.element.set("showMasterSp", "0")
    for index, accent in enumerate(style.cover_accents):
        _accent(page, accent, index)


def _accent(page: PptxSlide, accent: Accent, index: int) -> None:
    """`accent` behind the slide's other shapes."""
    shape = page.shapes.add_shape(
        SHAPES[accent.shape],
        emu(accent.left),
        emu(accent.top),
        emu(accent.width),
        emu(accent.height),
    )
    fill(shape, accent.color)
    element = shape.element
    tree = element.getparent()
    tree.remove(element)
    tree.insert(2 + index, element)  # after the tree's own properties


def _picture(page: PptxSlide, data: bytes, area: Area, number: int) -> None:
    """The image scaled to fit `area` whole, centred in it."""
    try:
        picture = page.shapes.add_picture(io.BytesIO(data), Emu(0), Emu(0))
    except (OSError, ValueError) as e:  # Pillow cannot read it, or PowerPoint cannot show it
        raise InvalidCommand(f"slide {number}'s image is not a PNG or JPEG image: {e}") from None
    scale = min(emu(area.width) / picture.width, emu(area.height) / picture.height)
    width, height = round(picture.width * scale), round(picture.height * scale)
    picture.width, picture.height = Emu(width), Emu(height)
    picture.left = Emu(emu(area.left) + (emu(area.width) - width) // 2)
    picture.top = Emu(emu(area.top) + (emu(area.height) - height) // 2)
