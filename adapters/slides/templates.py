"""The three deck templates, built in code from python-pptx's own default template.

Each is python-pptx's default presentation made 16:9 (13.333 x 7.5 in, its master and
layouts widened to match), with the `Style` of `styles.py` written into it: the
theme's colours and fonts, the master's background, title style and accent shapes.
`render_deck` starts every deck from these bytes; no binary file is kept in the repo.

    python -m adapters.slides.templates OUT_DIR  # business.pptx, minimal.pptx, creative.pptx
"""

from __future__ import annotations

import argparse
from functools import cache
from pathlib import Path

from pptx import Presentation
from pptx.enum.shapes import MSO_SHAPE
from pptx.opc.constants import RELATIONSHIP_TYPE as RT
from pptx.opc.oxml import serialize_part_xml
from pptx.oxml import parse_xml
from pptx.oxml.ns import qn
from pptx.presentation import Presentation as PptxPresentation
from pptx.shapes.autoshape import Shape
from pptx.slide import SlideMaster
from pptx.util import Emu, Inches

from adapters.slides.package import saved
from adapters.slides.styles import STYLES, Accent, Style
from adapters.slides.text import emu, rgb
from domain.decks import TEMPLATES, Template
from domain.slide_fit import SLIDE_HEIGHT_IN, SLIDE_WIDTH_IN

SHAPES = {"rect": MSO_SHAPE.RECTANGLE, "ellipse": MSO_SHAPE.OVAL}


@cache
def build_template(name: Template) -> bytes:
    """The PPTX bytes of template `name`: no slides; a styled master, on which every
    layout draws."""
    style = STYLES[name]
    prs = Presentation()
    widen(prs)
    master = prs.slide_master
    write_theme(master, style)
    master.background.fill.solid()
    master.background.fill.fore_color.rgb = rgb(style.background)
    if style.dark:  # text and background colours swap roles, as in PowerPoint's dark themes
        clr_map = master.element.find(qn("p:clrMap"))
        for key, value in (("bg1", "dk1"), ("tx1", "lt1"), ("bg2", "dk2"), ("tx2", "lt2")):
            clr_map.set(key, value)
    style_titles(master, style)
    for index, accent in enumerate(style.accents):
        add_master_accent(master, accent, index)
    return saved(prs, title=f"TokenDance {name} template")


def widen(prs: PptxPresentation) -> None:
    """Make the presentation 16:9, stretching the master's and layouts' own shapes."""
    old = prs.slide_width or Inches(10)
    prs.slide_width, prs.slide_height = emu(SLIDE_WIDTH_IN), emu(SLIDE_HEIGHT_IN)
    factor = emu(SLIDE_WIDTH_IN) / old
    owners = [prs.slide_master, *prs.slide_layouts]
    for owner in owners:
        for shape in owner.shapes:
            if shape.element.find(".//" + qn("a:xfrm")) is None:
                continue  # inherits its place from the master
            shape.left = Emu(round(shape.left * factor))
            shape.width = Emu(round(shape.width * factor))


def write_theme(master: SlideMaster, style: Style) -> None:
    """The theme's colour scheme and major (titles) and minor (body) fonts."""
    part = master.part.part_related_by(RT.THEME)
    theme = parse_xml(part.blob)
    theme.set("name", f"TokenDance {style.name}")
    text, background = style.text_color, style.background
    dark_1, light_1 = (background, text) if style.dark else (text, background)
    dark_2, light_2 = (
        (style.cover_background, style.title_color) if style.dark else (style.title_color, "EEEEEE")
    )
    colours = {"dk1": dark_1, "lt1": light_1, "dk2": dark_2, "lt2": light_2}
    colours |= {f"accent{i}": c for i, c in enumerate(style.palette, 1)}
    scheme = theme.find(".//" + qn("a:clrScheme"))
    scheme.set("name", f"TokenDance {style.name}")
    for slot, colour in colours.items():
        element = scheme.find(qn(f"a:{slot}"))
        for child in list(element):
            element.remove(child)
        element.append(parse_xml(f'<a:srgbClr {_NS_A} val="{colour}"/>'))
    fonts = theme.find(".//" + qn("a:fontScheme"))
    fonts.set("name", f"TokenDance {style.name}")
    fonts.find(qn("a:majorFont")).find(qn("a:latin")).set("typeface", style.title_font)
    fonts.find(qn("a:minorFont")).find(qn("a:latin")).set("typeface", style.body_font)
    part.blob = serialize_part_xml(theme)


def style_titles(master: SlideMaster, style: Style) -> None:
    """The master's title style: left-aligned, in the title colour (and bold)."""
    level = master.element.find(f"{qn('p:txStyles')}/{qn('p:titleStyle')}/{qn('a:lvl1pPr')}")
    level.set("algn", "l")
    run = level.find(qn("a:defRPr"))
    if style.title_bold:
        run.set("b", "1")
    fill = run.find(qn("a:solidFill"))
    for child in list(fill):
        fill.remove(child)
    fill.append(parse_xml(f'<a:srgbClr {_NS_A} val="{style.title_color}"/>'))


def add_master_accent(master: SlideMaster, accent: Accent, index: int) -> None:
    """`accent` behind everything else on the master, so on every slide that shows it."""
    tree = master.element.find(f"{qn('p:cSld')}/{qn('p:spTree')}")
    ids = [int(e.get("id")) for e in tree.iter(qn("p:cNvPr"))]
    sp = tree.add_autoshape(
        max(ids) + 1,
        f"Accent {index + 1}",
        accent.shape,  # its DrawingML preset name
        *(emu(v) for v in (accent.left, accent.top, accent.width, accent.height)),
    )
    tree.remove(sp)
    tree.insert(2 + index, sp)  # after the tree's own properties, before the placeholders
    fill(Shape(sp, master.shapes), accent.color)


def fill(shape: Shape, color: str) -> None:
    """A flat fill in `color` and no outline (nor the theme's shadow)."""
    shape.fill.solid()
    shape.fill.fore_color.rgb = rgb(color)
    shape.line.fill.background()
    shape.shadow.inherit = False


_NS_A = 'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"'


def main() -> None:
    parser = argparse.ArgumentParser(description="Write the deck templates as .pptx files.")
    parser.add_argument("out_dir", type=Path)
    out_dir = parser.parse_args().out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in TEMPLATES:
        path = out_dir / f"{name}.pptx"
        path.write_bytes(build_template(name))
        print(f"{path} ({len(build_template(name)):,} bytes)")


if __name__ == "__main__":
    main()
