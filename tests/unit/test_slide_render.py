"""Rendering decks to PPTX: every layout in every template, read back with python-pptx."""

from __future__ import annotations

import io
import re
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image
from pptx import Presentation
from pptx.enum.shapes import MSO_SHAPE_TYPE
from pptx.presentation import Presentation as PptxPresentation
from pptx.shapes.autoshape import Shape
from pptx.shapes.base import BaseShape
from pptx.shapes.graphfrm import GraphicFrame
from pptx.shapes.picture import Picture

from adapters.slides import templates
from adapters.slides.render import render_deck
from adapters.slides.templates import build_template
from domain.decks import TEMPLATES, Chart, Deck, Slide, Template
from domain.errors import InvalidCommand
from domain.slide_fit import BODY, FULL, split_to_fit
from tests.unit.pptx_package import check_package

REVENUE = Chart.of(
    {
        "type": "column",
        "categories": ["Q1", "Q2", "Q3", "Q4"],
        "series": [
            {"name": "Revenue", "values": [12.5, 14.1, 15.8, 17.2]},
            {"name": "Costs", "values": [9.8, 10.2, 10.1, 10.4]},
        ],
    }
)
SHARE = Chart.of(
    {"type": "pie", "categories": ["EU", "US", "Asia"], "series": [{"values": [50, 30, 20]}]}
)


def png(width: int = 640, height: int = 320) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), (200, 40, 40)).save(buffer, "PNG")
    return buffer.getvalue()


PNG = png()
IMAGES = {"img-1": PNG}


def every_layout() -> tuple[Slide, ...]:
    return (
        Slide("Quarterly review", body="Prepared for the board", layout="title", notes="Hello"),
        Slide("Highlights", bullets=("Revenue grew 12%", "Costs held flat"), notes="Key"),
        Slide("Compare", bullets=("North", "South", "East", "West"), layout="two_column"),
        Slide("Revenue by quarter", chart=REVENUE, layout="chart", bullets=("Up each quarter",)),
        Slide("Market share", chart=SHARE, layout="chart"),
        Slide("Plant", image="img-1", layout="image", body="The new plant"),
        Slide("Bars", layout="chart", chart=Chart.of({**REVENUE.to_json(), "type": "bar"})),
        Slide("Trend", layout="chart", chart=Chart.of({**REVENUE.to_json(), "type": "line"})),
        Slide("Next steps", bullets=("Hire", "Ship"), layout="closing", notes="Questions?"),
    )


def deck(slides: tuple[Slide, ...], template: Template = "business") -> Deck:
    return Deck(1, "Review", template, slides, created_at=1)


def opened(data: bytes) -> PptxPresentation:
    check_package(data)
    return Presentation(io.BytesIO(data))


def shapes(prs: PptxPresentation) -> Iterator[tuple[int, BaseShape]]:
    for number, page in enumerate(prs.slides, 1):
        for shape in page.shapes:
            yield number, shape


def text_boxes(prs: PptxPresentation) -> Iterator[Shape]:
    """The shapes holding text other than titles, slide by slide."""
    for _, shape in shapes(prs):
        if isinstance(shape, Shape) and shape.has_text_frame and not shape.is_placeholder:
            yield shape


def text_of(prs: PptxPresentation) -> str:
    return " ".join(s.text_frame.text for s in text_boxes(prs))


def charts(prs: PptxPresentation) -> dict[int, GraphicFrame]:
    return {n: s for n, s in shapes(prs) if isinstance(s, GraphicFrame) and s.has_chart}


@pytest.mark.parametrize("template", TEMPLATES)
def test_every_layout_renders_in_every_template(template: Template) -> None:
    slides = every_layout()
    prs = opened(render_deck(deck(slides, template), IMAGES))
    assert len(prs.slides) == len(slides)
    titles = [page.shapes.title.text_frame.text for page in prs.slides if page.shapes.title]
    assert titles == [s.title for s in slides]
    notes = [
        page.notes_slide.notes_text_frame.text if page.has_notes_slide else ""
        for page in prs.slides
    ]
    assert notes == [s.notes for s in slides]
    assert prs.slide_width == 12192000 and prs.slide_height == 6858000  # 16:9
    text = text_of(prs)
    for word in ("Prepared", "Revenue grew 12%", "North", "West", "Up each quarter", "Hire"):
        assert word in text


def test_native_charts_hold_the_categories_and_values_given() -> None:
    prs = opened(render_deck(deck(every_layout()), IMAGES))
    found = charts(prs)
    assert sorted(found) == [4, 5, 7, 8]
    column = found[4].chart
    plot = column.plots[0]
    assert list(plot.categories) == ["Q1", "Q2", "Q3", "Q4"]
    assert [(s.name, tuple(s.values)) for s in plot.series] == [
        (s.name, s.values) for s in REVENUE.series
    ]
    assert column.has_legend
    pie = found[5].chart
    assert list(pie.plots[0].categories) == ["EU", "US", "Asia"]
    assert tuple(pie.plots[0].series[0].values) == (50.0, 30.0, 20.0)
    assert pie.has_legend and pie.plots[0].data_labels.show_percentage
    kinds = {n: found[n].chart.chart_type for n in found}
    assert [str(kinds[n]).split()[0] for n in (4, 5, 7, 8)] == [
        "COLUMN_CLUSTERED",
        "PIE",
        "BAR_CLUSTERED",
        "LINE_MARKERS",
    ]


def test_an_image_slide_embeds_the_picture_whole_and_inside_its_area() -> None:
    prs = opened(render_deck(deck((Slide("Plant", image="img-1", layout="image"),)), IMAGES))
    pictures = [s for _, s in shapes(prs) if s.shape_type == MSO_SHAPE_TYPE.PICTURE]
    assert len(pictures) == 1
    picture = pictures[0]
    assert isinstance(picture, Picture)
    assert picture.image.blob == PNG
    assert abs(picture.width / picture.height - 2.0) < 0.01  # the PNG's aspect ratio kept
    emu = 914400
    assert FULL.left * emu - 1 <= picture.left
    assert picture.left + picture.width <= (FULL.left + FULL.width) * emu + 1
    assert FULL.top * emu - 1 <= picture.top
    assert picture.top + picture.height <= (FULL.top + FULL.height) * emu + 1


def test_an_image_missing_from_the_mapping_is_refused() -> None:
    slides = (Slide("Plant", image="img-404", layout="image"),)
    with pytest.raises(InvalidCommand, match="img-404"):
        render_deck(deck(slides), IMAGES)


def test_bytes_that_are_no_image_are_refused() -> None:
    slides = (Slide("Plant", image="img-1", layout="image"),)
    with pytest.raises(InvalidCommand, match="not a PNG or JPEG"):
        render_deck(deck(slides), {"img-1": b"not an image"})


def test_the_same_deck_renders_to_the_same_bytes() -> None:
    first = render_deck(deck(every_layout()), IMAGES)
    assert render_deck(deck(every_layout()), IMAGES) == first
    with zipfile.ZipFile(io.BytesIO(first)) as archive:
        assert {i.date_time for i in archive.infolist()} == {(2000, 1, 1, 0, 0, 0)}
        core = archive.read("docProps/core.xml").decode()
        workbooks = [n for n in archive.namelist() if n.endswith(".xlsx")]
        assert len(workbooks) == 4  # one per chart, holding its data
        for name in workbooks:
            with zipfile.ZipFile(io.BytesIO(archive.read(name))) as workbook:
                created = re.findall(r"<dcterms:created[^>]*>([^<]+)<", workbook_core(workbook))
                assert created == ["2000-01-01T00:00:00Z"]
    assert set(re.findall(r">(\d{4}-\d\d-\d\dT[^<]+)<", core)) == {"2000-01-01T00:00:00Z"}


def workbook_core(workbook: zipfile.ZipFile) -> str:
    return workbook.read("docProps/core.xml").decode()


def test_a_change_to_slide_3_leaves_every_other_slide_part_the_same() -> None:
    before = every_layout()
    after = (
        *before[:2],
        Slide("Compare", bullets=("Only", "two"), layout="two_column"),
        *before[3:],
    )
    a, b = (zipfile.ZipFile(io.BytesIO(render_deck(deck(d), IMAGES))) for d in (before, after))
    parts = sorted(n for n in a.namelist() if re.fullmatch(r"ppt/slides/slide\d+\.xml", n))
    assert len(parts) == len(before)
    differ = [n for n in parts if a.read(n) != b.read(n)]
    assert differ == ["ppt/slides/slide3.xml"]


def test_sixty_slides_render() -> None:
    slides = tuple(
        Slide(f"Slide {i}", bullets=(f"Point {i}", "Another point"), notes=f"n{i}")
        if i % 10
        else Slide(f"Slide {i}", chart=REVENUE, layout="chart")
        for i in range(60)
    )
    prs = opened(render_deck(deck(slides, "creative"), {}))
    assert len(prs.slides) == 60
    titles = [page.shapes.title.text_frame.text for page in prs.slides if page.shapes.title]
    assert titles == [f"Slide {i}" for i in range(60)]
    assert len(charts(prs)) == 6


@pytest.mark.parametrize(
    "slide",
    [
        Slide("Findings", bullets=(" ".join(f"Finding {i} grew by {i}%." for i in range(140)),)),
        Slide("Survey", bullets=tuple(f"Point {i}: " + "long words here " * 12 for i in range(30))),
    ],
    ids=["one 3000-character bullet", "30 long bullets"],
)
def test_long_text_is_split_and_every_word_is_rendered(slide: Slide) -> None:
    assert sum(len(b) for b in slide.bullets) > 2500
    parts = split_to_fit(slide)
    assert len(parts) > 1
    prs = opened(render_deck(deck(tuple(parts)), {}))
    rendered, given = text_of(prs).split(), " ".join(slide.bullets).split()
    assert rendered == given
    sizes = {
        run.font.size.pt
        for s in text_boxes(prs)
        for p in s.text_frame.paragraphs
        for run in p.runs
        if run.font.size is not None
    }
    assert sizes and all(BODY.min_pt <= size <= BODY.max_pt for size in sizes)


def test_the_templates_differ_in_colours_fonts_and_accents() -> None:
    looks = set()
    for name in TEMPLATES:
        data = build_template(name)
        check_package(data)
        prs = Presentation(io.BytesIO(data))
        assert len(prs.slides) == 0
        assert prs.slide_width == 12192000 and prs.slide_height == 6858000
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            theme = archive.read("ppt/theme/theme1.xml").decode()
        fonts = tuple(re.findall(r'<a:latin typeface="([^"]+)"', theme)[:2])
        background = prs.slide_master.background.fill.fore_color.rgb
        accents = tuple(
            (s.left, s.top, s.width) for s in prs.slide_master.shapes if s.name.startswith("Accent")
        )
        assert accents
        looks.add((fonts, str(background), accents))
        assert build_template(name) == data  # cached, and the same each build
    assert len(looks) == len(TEMPLATES)


def test_the_template_command_writes_the_three_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sys, "argv", ["templates", str(tmp_path)])
    templates.main()
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == ["business.pptx", "creative.pptx", "minimal.pptx"]
    for path in tmp_path.iterdir():
        check_package(path.read_bytes())


def test_the_package_check_catches_a_missing_part() -> None:
    data = render_deck(deck(every_layout()[:2]), {})
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for item in source.infolist():
            if item.filename != "ppt/slides/slide2.xml":
                target.writestr(item, source.read(item))
    with pytest.raises(AssertionError, match=r"slide2\.xml"):
        check_package(out.getvalue())
