"""`DocumentRenderer` on ReportLab: a report's Markdown laid out as a PDF.

Markdown is parsed by markdown-it-py (CommonMark, with tables and strikethrough) and
each block becomes a ReportLab flowable: headings, paragraphs, lists, quotes, code,
tables, rules; links (and bare URLs) stay clickable. The output is invariant (no
creation date, a fixed document id): the same report gives the same bytes, so a
replayed `create_doc` stores the same blob.
"""

from __future__ import annotations

import asyncio
import io
import threading
from collections.abc import Iterator

from markdown_it import MarkdownIt
from markdown_it.tree import SyntaxTreeNode
from reportlab.lib import colors
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import ParagraphStyle
from reportlab.lib.units import mm
from reportlab.platypus import (
    Flowable,
    HRFlowable,
    Indenter,
    ListFlowable,
    ListItem,
    Paragraph,
    SimpleDocTemplate,
    Spacer,
    Table,
    TableStyle,
)

from adapters.documents import fonts
from adapters.documents.inline import inline_markup

BODY = ParagraphStyle("body", fontName=fonts.BODY, fontSize=10.5, leading=15, spaceAfter=6)
_HEADING_SIZES = {"h1": 20.0, "h2": 16.0, "h3": 13.5, "h4": 12.0, "h5": 11.0, "h6": 10.5}
HEADINGS = {
    tag: ParagraphStyle(tag, parent=BODY, fontName=fonts.BODY_BOLD, fontSize=size,
                        leading=size * 1.3, spaceBefore=size * 0.6, spaceAfter=size * 0.35,
                        keepWithNext=1)
    for tag, size in _HEADING_SIZES.items()
}  # fmt: skip
CELL = ParagraphStyle("cell", parent=BODY, fontSize=9.5, leading=12.5, spaceAfter=0)
CODE = ParagraphStyle(
    "code", parent=BODY, fontName=fonts.MONO, fontSize=8.5, leading=11, borderPadding=4,
    backColor=colors.HexColor("#f3f4f6"), spaceBefore=4, spaceAfter=10, wordWrap="CJK",
)  # fmt: skip


class ReportLabDocumentRenderer:
    """Markdown to PDF with ReportLab; every font ships with ReportLab (see `fonts`)."""

    def __init__(self, *, page_size: tuple[float, float] = A4, margin: float = 20 * mm) -> None:
        self.page_size = page_size
        self.margin = margin
        self._markdown = MarkdownIt("commonmark").enable(["table", "strikethrough"])
        # ReportLab keeps per-process state (font subsets, registries): one build at a time.
        self._lock = threading.Lock()

    async def render_pdf(self, title: str, markdown: str) -> bytes:
        return await asyncio.to_thread(self.render, title, markdown)

    def render(self, title: str, markdown: str) -> bytes:
        fonts.register()
        tree = SyntaxTreeNode(self._markdown.parse(fonts.printable(markdown)))
        out = io.BytesIO()
        with self._lock:
            doc = SimpleDocTemplate(
                out, pagesize=self.page_size, title=fonts.printable(title), invariant=True,
                leftMargin=self.margin, rightMargin=self.margin, topMargin=self.margin,
                bottomMargin=self.margin, creator="TokenDance", author="TokenDance",
            )  # fmt: skip
            story = list(_Blocks(doc.width).of(tree.children)) or [Spacer(1, 1)]
            doc.build(story)
        return out.getvalue()


class _Blocks:
    """The flowables of Markdown block nodes, for a frame `width` points wide."""

    def __init__(self, width: float) -> None:
        self.width = width

    def of(self, nodes: list[SyntaxTreeNode]) -> Iterator[Flowable]:
        for node in nodes:
            yield from self.block(node)

    def block(self, node: SyntaxTreeNode) -> Iterator[Flowable]:
        kind = node.type
        if kind == "heading":
            yield _paragraph(node, HEADINGS.get(node.tag, HEADINGS["h6"]))
        elif kind == "paragraph":
            yield _paragraph(node, BODY)
        elif kind in ("bullet_list", "ordered_list"):
            yield self.listing(node)
        elif kind == "blockquote":
            yield Indenter(left=14)
            yield from self.of(node.children)
            yield Indenter(left=-14)
        elif kind in ("fence", "code_block"):
            yield _code(node.content)
        elif kind == "hr":
            yield HRFlowable(width="100%", thickness=0.6, color=colors.grey, spaceBefore=4,
                             spaceAfter=8)  # fmt: skip
        elif kind == "table":
            yield self.table(node)
        else:  # html_block and anything unforeseen: shown as its text, never interpreted
            yield Paragraph(fonts.runs(node.content), BODY)

    def listing(self, node: SyntaxTreeNode) -> ListFlowable:
        items = [ListItem(list(self.of(item.children)) or [Spacer(1, 1)]) for item in node.children]
        ordered = node.type == "ordered_list"
        first = node.attrs.get("start", 1)
        return ListFlowable(
            items,  # type: ignore[arg-type]  # the stubs miss that ListItems belong here
            bulletType="1" if ordered else "bullet",
            start=(first if isinstance(first, int) else 1) if ordered else "\u2022",
            bulletFontName=fonts.BODY,
            bulletFontSize=BODY.fontSize,
            leftIndent=18 if ordered else 14,
        )

    def table(self, node: SyntaxTreeNode) -> Table:
        rows = [tr for section in node.children for tr in section.children]
        data = [[_paragraph(cell, CELL) for cell in tr.children] for tr in rows]
        columns = max((len(r) for r in data), default=1)
        data = [r + [Paragraph("", CELL)] * (columns - len(r)) for r in data]
        table = Table(data, colWidths=[self.width / columns] * columns, repeatRows=1)
        table.setStyle(
            TableStyle([
                ("GRID", (0, 0), (-1, -1), 0.5, colors.grey),
                ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#f3f4f6")),
                ("VALIGN", (0, 0), (-1, -1), "TOP"),
            ])
        )  # fmt: skip
        return table


def _paragraph(node: SyntaxTreeNode, style: ParagraphStyle) -> Paragraph:
    markup = "".join(inline_markup(child) for child in node.children)
    # CJK text has no spaces to break at: let such a paragraph break between characters.
    cjk = fonts.HAN in markup or fonts.HANGUL in markup
    return Paragraph(markup, _cjk(style) if cjk else style)


def _cjk(style: ParagraphStyle) -> ParagraphStyle:
    return ParagraphStyle(f"{style.name}-cjk", parent=style, wordWrap="CJK")


def _code(text: str) -> Paragraph:
    # No-break spaces keep the indentation; the CJK wrap breaks long lines anywhere.
    lines = text.rstrip("\n").replace(" ", "\u00a0").split("\n")
    return Paragraph("<br/>".join(fonts.runs(line, mono=True) for line in lines), CODE)
