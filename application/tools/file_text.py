"""A workspace file's bytes as the text the model reads: text, Markdown, CSV, JSON and
the like as they are, a PDF by its pages (pypdf); any other binary file is refused
with a kept failure that says so."""

from __future__ import annotations

import asyncio
import io

import pypdf
from pypdf.errors import PyPdfError

from application.ports import ToolExecutionError
from domain.workspace_files import WorkspaceFile

MAX_PDF_PAGES = 2000  # pages of a PDF turned into text; the rest is left out (said so)
TEXT_TYPES = (
    "text/",
    "application/json",
    "application/jsonl",
    "application/x-ipynb+json",
    "application/yaml",
    "application/x-yaml",
    "application/toml",
    "application/xml",
    "application/javascript",
    "application/sql",
    "image/svg+xml",
)
PDF = "application/pdf"
SNIFFED = 8192  # bytes looked at to tell an untyped file's text from binary


class FileToolError(ToolExecutionError):
    """A file tool failed; `code` says why."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


async def file_text(file: WorkspaceFile, data: bytes) -> str:
    """A file as text (text, Markdown, CSV, JSON; a PDF by its pages); `FileToolError`
    BINARY_FILE or PDF_UNREADABLE otherwise."""
    media_type = file.media_type.split(";", 1)[0].strip()
    if media_type == PDF:
        return await asyncio.to_thread(pdf_text, file.path, data)
    if media_type.startswith(TEXT_TYPES):
        return data.decode("utf-8-sig", errors="replace")
    text = _sniffed_text(data)
    if text is None:
        raise FileToolError(
            "BINARY_FILE",
            f"{file.path} is a binary file ({file.media_type}, {file.size:,} bytes): it cannot "
            "be read as text",
        )
    return text


def _sniffed_text(data: bytes) -> str | None:
    """The bytes as text if they look like UTF-8 text (no NUL, valid UTF-8), else None."""
    if b"\x00" in data[:SNIFFED]:
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


def pdf_text(path: str, data: bytes) -> str:
    """A PDF's text, page by page under `--- page n ---` lines."""
    try:
        pages = pypdf.PdfReader(io.BytesIO(data)).pages
        parts = [
            f"--- page {n} ---\n{(page.extract_text() or '').strip() or '(no text on this page)'}"
            for n, page in enumerate(pages[:MAX_PDF_PAGES], start=1)
        ]
        if len(pages) > MAX_PDF_PAGES:
            parts.append(f"--- the other {len(pages) - MAX_PDF_PAGES} pages are left out ---")
    except (PyPdfError, ValueError, KeyError, TypeError) as e:
        raise FileToolError(
            "PDF_UNREADABLE", f"{path} could not be read as a PDF: {type(e).__name__}: {e}"
        ) from None
    return "\n\n".join(parts)
