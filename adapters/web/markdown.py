"""A fetched body turned into a `Page`: HTML, plain text and PDF alike become Markdown.

HTML goes through trafilatura (main content only: no menus, footers or cookie banners;
headings, lists, tables, emphasis and links kept), PDF through pypdf (the text of each
page under a "## Page n" heading), plain text stays as it is. A body that is not what it
claims to be (binary served as HTML, a PDF that does not parse) is a `PageError`.
These are CPU work: the reader runs them in a thread.
"""

from __future__ import annotations

import io
import re
import unicodedata
from dataclasses import dataclass

import charset_normalizer
import pypdf

from application.ports import Page, PageError

HTML = frozenset({"text/html", "application/xhtml+xml"})
PDF = frozenset({"application/pdf", "application/x-pdf"})
TEXT = frozenset({"application/json", "application/xml", "application/javascript"})
UNLABELLED = frozenset({"", "application/octet-stream", "binary/octet-stream"})
_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
_CONTROL_SHARE = 0.01  # more control characters than this in "text" means a binary body


@dataclass(frozen=True)
class Fetched:
    """A body as the server sent it (decompressed), with what the server said it was."""

    url: str  # after redirects
    media_type: str  # lower case, no parameters; "" when the server sent none
    charset: str | None
    body: bytes


def to_page(fetched: Fetched) -> Page:
    """The body as Markdown with a title; `PageError` for a body that cannot be read."""
    kind = _kind(fetched)
    if kind == "pdf":
        title, markdown = pdf_to_markdown(fetched.body)
    else:
        text = decode_text(fetched.body, fetched.charset, fetched.media_type or "the body")
        title, markdown = html_to_markdown(text, fetched.url) if kind == "html" else ("", text)
    title = title or _first_heading(markdown) or fetched.url
    return Page(
        url=fetched.url,
        title=title,
        markdown=markdown.strip(),
        media_type=fetched.media_type or "unknown",
        fetched_bytes=len(fetched.body),
    )


def html_to_markdown(html: str, url: str) -> tuple[str, str]:
    """(the <title>, the main content as Markdown) of an HTML document."""
    import trafilatura  # with its lxml parsers, a fifth of a second: on the first page

    tree = trafilatura.load_html(html)
    if tree is None:
        return "", ""
    title = " ".join(str(tree.findtext(".//title") or "").split())
    markdown = trafilatura.extract(
        tree,
        url=url,
        output_format="markdown",
        include_links=True,
        include_tables=True,
        include_formatting=True,
        include_comments=False,
        favor_recall=True,
    )
    # trafilatura finds no main content in some pages (a bare list of links, a form):
    # their whole text is still better than nothing.
    return title, markdown if markdown is not None else trafilatura.html2txt(html)


def pdf_to_markdown(body: bytes) -> tuple[str, str]:
    """(the title in the PDF's metadata, the text of each page under "## Page n")."""
    try:
        reader = pypdf.PdfReader(io.BytesIO(body))
        if reader.is_encrypted and not reader.decrypt(""):
            raise PageError("the PDF is encrypted with a password")
        title = (reader.metadata.title if reader.metadata else None) or ""
        pages = [page.extract_text() for page in reader.pages]
    except PageError:
        raise
    except Exception as e:  # pypdf raises errors of many types on a malformed file
        raise PageError(f"the PDF does not parse ({type(e).__name__}: {e})") from None
    sections = [f"## Page {n}\n\n{text.strip()}" for n, text in enumerate(pages, 1) if text.strip()]
    return " ".join(str(title).split()), "\n\n".join(sections)


def decode_text(body: bytes, charset: str | None, what: str) -> str:
    """The body as text (the declared charset, else UTF-8, else a detected one).

    `PageError` when it is binary: NUL bytes, or more than a few control characters.
    """
    text = _decode(body, charset)
    if text is None or _looks_binary(text):
        raise PageError(f"the page says it is {what} but its body is binary, not text")
    return text


def _kind(fetched: Fetched) -> str:
    media_type, head = fetched.media_type, fetched.body[:1024]
    if media_type in PDF:
        return "pdf"
    if media_type in HTML:
        return "html"
    if (
        media_type.startswith("text/")
        or media_type in TEXT
        or media_type.endswith(("+json", "+xml"))
    ):
        return "text"
    if media_type in UNLABELLED:
        if head.lstrip().startswith(b"%PDF-"):
            return "pdf"
        lowered = head.lower()
        return "html" if b"<html" in lowered or b"<!doctype html" in lowered else "text"
    raise PageError(f"cannot read {media_type} (only HTML, plain text and PDF are read)")


def _decode(body: bytes, charset: str | None) -> str | None:
    for encoding in (charset, "utf-8-sig"):
        if encoding:
            try:
                return body.decode(encoding)
            except (LookupError, UnicodeDecodeError):
                continue
    best = charset_normalizer.from_bytes(body[:200_000]).best()
    return None if best is None else body.decode(best.encoding, errors="replace")


def _looks_binary(text: str) -> bool:
    if "\x00" in text:
        return True
    sample = text[:100_000]
    control = sum(
        1 for c in sample if c not in "\t\n\r\f\v" and unicodedata.category(c) in ("Cc", "Cs")
    )
    return control > _CONTROL_SHARE * max(len(sample), 1)


def _first_heading(markdown: str) -> str:
    found = _HEADING.search(markdown)
    return found.group(1) if found else ""
