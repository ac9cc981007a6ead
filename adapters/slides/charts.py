"""A slide's chart as a native PowerPoint chart, coloured from the deck's template.

The chart's data also goes into the workbook embedded with it (so "Edit Data" works in
PowerPoint); XlsxWriter dates that workbook now, so it is dated `FIXED_TIME` instead,
keeping a deck's bytes the same from one render to the next.
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager
from typing import IO, cast

from pptx.chart.chart import Chart as PptxChart
from pptx.chart.data import CategoryChartData, ChartData
from pptx.chart.xlsx import CategoryWorkbookWriter
from pptx.dml.color import RGBColor
from pptx.enum.chart import XL_CHART_TYPE, XL_LABEL_POSITION, XL_LEGEND_POSITION
from pptx.shapes.graphfrm import GraphicFrame
from pptx.slide import Slide as PptxSlide
from pptx.util import Pt
from xlsxwriter import Workbook
from xlsxwriter.worksheet import Worksheet

from adapters.slides.package import FIXED_TIME
from adapters.slides.styles import Style
from adapters.slides.text import emu, rgb
from domain.decks import Chart, ChartType
from domain.slide_fit import Area

KINDS: dict[ChartType, XL_CHART_TYPE] = {
    "bar": XL_CHART_TYPE.BAR_CLUSTERED,
    "column": XL_CHART_TYPE.COLUMN_CLUSTERED,
    "line": XL_CHART_TYPE.LINE_MARKERS,
    "pie": XL_CHART_TYPE.PIE,
}
FONT_PT = 14


def add_chart(slide: PptxSlide, chart: Chart, area: Area, style: Style) -> PptxChart:
    """`chart` drawn natively in `area`, its text and colours from `style`."""
    # python-pptx's chart data classes carry no type hints.
    data = _FixedDateChartData()  # type: ignore[no-untyped-call]
    data.categories = list(chart.categories)
    for series in chart.series:
        data.add_series(series.name, series.values)  # type: ignore[no-untyped-call]
    left, top, width, height = (emu(v) for v in (area.left, area.top, area.width, area.height))
    kind = KINDS[chart.type]
    drawn = slide.shapes.add_chart(kind, left, top, width, height, cast(ChartData, data))
    # add_chart returns the chart's graphic frame, whatever its annotation says
    native = cast(GraphicFrame, drawn).chart
    native.has_title = False
    native.font.size, native.font.name = Pt(FONT_PT), style.body_font
    native.font.color.rgb = rgb(style.text_color)
    native.has_legend = chart.type == "pie" or len(chart.series) > 1
    if native.has_legend:
        native.legend.position = XL_LEGEND_POSITION.BOTTOM
        native.legend.include_in_layout = False
    if chart.type == "pie":
        _pie(native, style)
    else:
        _axes(native, chart.type, style)
    return native


def _pie(native: PptxChart, style: Style) -> None:
    plot = native.plots[0]
    plot.has_data_labels = True
    labels = plot.data_labels
    labels.show_percentage, labels.show_value = True, False
    labels.number_format, labels.number_format_is_linked = "0%", False
    labels.position = XL_LABEL_POSITION.OUTSIDE_END  # on the background, in the text colour
    for index, point in enumerate(plot.series[0].points):
        point.format.fill.solid()
        point.format.fill.fore_color.rgb = _colour(style, index)


def _axes(native: PptxChart, kind: ChartType, style: Style) -> None:
    muted = rgb(style.muted_color)
    for index, series in enumerate(native.plots[0].series):
        if kind == "line":
            series.format.line.color.rgb = _colour(style, index)
            series.format.line.width = Pt(2.5)
            series.marker.format.fill.solid()
            series.marker.format.fill.fore_color.rgb = _colour(style, index)
            series.smooth = False
        else:
            series.format.fill.solid()
            series.format.fill.fore_color.rgb = _colour(style, index)
    categories, values = native.category_axis, native.value_axis
    categories.format.line.color.rgb = muted
    categories.reverse_order = kind == "bar"  # a bar chart's first category on top
    values.has_major_gridlines = True
    values.major_gridlines.format.line.color.rgb = muted
    values.format.line.fill.background()


def _colour(style: Style, index: int) -> RGBColor:
    return rgb(style.palette[index % len(style.palette)])


class _FixedDateWriter(CategoryWorkbookWriter):
    @contextmanager
    def _open_worksheet(self, xlsx_file: IO[bytes]) -> Generator[tuple[Workbook, Worksheet]]:
        workbook = Workbook(xlsx_file, {"in_memory": True})
        workbook.set_properties({"created": FIXED_TIME})
        worksheet = workbook.add_worksheet()
        yield workbook, worksheet
        workbook.close()


class _FixedDateChartData(CategoryChartData):
    @property
    def _workbook_writer(self) -> _FixedDateWriter:
        return _FixedDateWriter(self)  # type: ignore[no-untyped-call]
