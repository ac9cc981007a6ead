"""Writing paragraphs into a text frame at the size `domain/slide_fit.py` chose.

Line spacing is set to exactly `LINE_HEIGHT_EM` of the font size and paragraphs are
`PARAGRAPH_GAP_EM` apart, the figures the fit model counts with; bullets hang
`BULLET_INDENT_EM` in. Each frame also wraps words and is marked shrink-on-overflow,
a fallback for viewers whose fonts run wider than the model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pptx.dml.color import RGBColor
from pptx.enum.text import MSO_ANCHOR, MSO_AUTO_SIZE, PP_ALIGN
from pptx.oxml import parse_xml
from pptx.shapes.autoshape import Shape
from pptx.shapes.base import BaseShape
from pptx.slide import Slide as PptxSlide
from pptx.text.text import TextFrame, _Paragraph
from pptx.util import Emu, Pt

from domain.slide_fit import INSET_X_IN, INSET_Y_IN, Area, Box
from domain.text_fit import BULLET_INDENT_EM, LINE_HEIGHT_EM, PARAGRAPH_GAP_EM, Para

_NS_A = 'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"'


@dataclass(frozen=True)
class Look:
    """How a box's text looks: its font, colour and weight, and its bullets' colour."""

    font: str
    color: str
    bullet_color: str
    bold: bool = False
    anchor: MSO_ANCHOR = MSO_ANCHOR.TOP


def rgb(color: str) -> RGBColor:
    """The colour `color` ("RRGGBB")."""
    return RGBColor.from_string(color)  # type: ignore[no-any-return]


def emu(inches: float) -> Emu:
    return Emu(round(inches * 914400))


def place(shape: BaseShape, area: Area) -> None:
    shape.left, shape.top = emu(area.left), emu(area.top)
    shape.width, shape.height = emu(area.width), emu(area.height)


def size_in(box: Box, paras: Sequence[Para]) -> int:
    """The size `box` can show `paras` at; its smallest if they do not fit (the caller
    splits such a slide first: `split_to_fit`)."""
    return box.size_for(paras) or box.min_pt


def add_text(slide: PptxSlide, box: Box, paras: Sequence[Para], size: int, look: Look) -> Shape:
    """A new text box at `box` holding `paras` at `size` points."""
    shape = slide.shapes.add_textbox(emu(box.left), emu(box.top), emu(box.width), emu(box.height))
    write(shape.text_frame, paras, size, look)
    return shape


def write(frame: TextFrame, paras: Sequence[Para], size: int, look: Look) -> None:
    """`paras` in a new (empty) frame, left-aligned, at `size` points."""
    frame.word_wrap = True
    frame.auto_size = MSO_AUTO_SIZE.TEXT_TO_FIT_SHAPE
    frame.vertical_anchor = look.anchor
    frame.margin_left = frame.margin_right = emu(INSET_X_IN)
    frame.margin_top = frame.margin_bottom = emu(INSET_Y_IN)
    for index, para in enumerate(paras):
        paragraph = frame.paragraphs[0] if index == 0 else frame.add_paragraph()
        paragraph.alignment = PP_ALIGN.LEFT
        paragraph.line_spacing = Pt(LINE_HEIGHT_EM * size)
        if index:
            paragraph.space_before = Pt(PARAGRAPH_GAP_EM * size)
        if para.bullet:
            _bullet(paragraph, size, look.bullet_color)
        run = paragraph.add_run()
        run.text = para.text
        font = run.font
        font.size, font.name, font.bold = Pt(size), look.font, look.bold
        font.color.rgb = rgb(look.color)


def _bullet(paragraph: _Paragraph, size: int, color: str) -> None:
    """A hanging "•" in `color`; python-pptx has no API for bullets, so its XML."""
    ppr = paragraph._p.get_or_add_pPr()
    indent = round(Pt(BULLET_INDENT_EM * size))
    ppr.set("marL", str(indent))
    ppr.set("indent", str(-indent))
    for xml in (
        f'<a:buClr {_NS_A}><a:srgbClr val="{color}"/></a:buClr>',
        f'<a:buFont {_NS_A} typeface="Arial"/>',
        f'<a:buChar {_NS_A} char="•"/>',
    ):
        ppr.append(parse_xml(xml))
