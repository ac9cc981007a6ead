"""Markdown inline nodes as ReportLab paragraph markup: emphasis, code, links, URLs.

Everything the text says is escaped; only the tags written here reach ReportLab. A link
is kept only for http(s) and mailto targets, and a bare URL in the text becomes one.
"""

from __future__ import annotations

import re
from xml.sax.saxutils import quoteattr

from markdown_it.tree import SyntaxTreeNode

from adapters.documents import fonts

LINK_COLOR = "#1a56db"
_URL = re.compile(r"https?://[^\s<>\"'\[\]]+")
_TRAILING = ".,;:!?)"  # punctuation after a URL, not part of it
_WRAPS = {"strong": ("<b>", "</b>"), "em": ("<i>", "</i>"), "s": ("<strike>", "</strike>")}


def inline_markup(node: SyntaxTreeNode) -> str:
    kind = node.type
    if kind == "text":
        return linked_text(node.content)
    if kind == "softbreak":
        return " "
    if kind == "hardbreak":
        return "<br/>"
    if kind == "code_inline":
        return f'<font name="{fonts.MONO}">{fonts.runs(node.content, mono=True)}</font>'
    if kind in _WRAPS:
        start, end = _WRAPS[kind]
        return start + _children(node) + end
    if kind == "link":
        href = node.attrs.get("href")
        inner = _children(node)
        return _anchor(href, inner) if isinstance(href, str) and _linkable(href) else inner
    if kind == "image":  # not fetched: a report's PDF is made offline
        alt = "".join(c.content for c in node.children) or str(node.attrs.get("src", ""))
        return fonts.runs(f"[image: {alt}]")
    if node.children:  # the "inline" container, and anything else with children
        return _children(node)
    return fonts.runs(node.content)  # html_inline: shown as text, never interpreted


def linked_text(text: str) -> str:
    """Plain text with each bare http(s) URL made a link."""
    out: list[str] = []
    at = 0
    for match in _URL.finditer(text):
        url = match.group(0).rstrip(_TRAILING)
        out += [fonts.runs(text[at : match.start()]), _anchor(url, fonts.runs(url))]
        at = match.start() + len(url)
    out.append(fonts.runs(text[at:]))
    return "".join(out)


def _children(node: SyntaxTreeNode) -> str:
    return "".join(inline_markup(child) for child in node.children)


def _linkable(href: str) -> bool:
    return href.startswith(("http://", "https://", "mailto:"))


def _anchor(href: str, inner: str) -> str:
    return f'<a href={quoteattr(fonts.printable(href))} color="{LINK_COLOR}">{inner}</a>'
