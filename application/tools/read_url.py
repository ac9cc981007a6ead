"""The `read_url` tool: a web page (HTML, plain text or PDF) as clean Markdown."""

from __future__ import annotations

import re
from typing import Annotated, Literal

import msgspec

from application.ports import PageReader
from application.tools.base import Tool, ToolContext, ToolOutput, source_marker
from domain.values import SourceSeen

_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_EMPHASIS = re.compile(r"(\*\*|\*)(?=\S)(.+?)(?<=\S)\1")


class ReadUrlArgs(msgspec.Struct, forbid_unknown_fields=True):
    url: Annotated[
        str,
        msgspec.Meta(
            min_length=1, max_length=2048, description="The http(s) URL of the page to read."
        ),
    ]
    mode: Annotated[
        Literal["markdown", "text"],
        msgspec.Meta(
            description=(
                "markdown: headings, lists, tables and links kept; "
                "text: the same without link targets and emphasis (shorter)."
            )
        ),
    ] = "markdown"


class ReadUrl(Tool[ReadUrlArgs]):
    name = "read_url"
    description = (
        "Fetch a public web page (HTML, plain text or PDF) and return its main content as "
        "Markdown, with its title and final URL. Private and local addresses are refused. "
        "Use it to read a search result in full before citing it."
    )
    Args = ReadUrlArgs

    def __init__(self, reader: PageReader) -> None:
        self.reader = reader

    async def run(self, args: ReadUrlArgs, context: ToolContext) -> str | ToolOutput:
        page = await self.reader.read(args.url)
        body = page.markdown if args.mode == "markdown" else plain_text(page.markdown)
        header = (
            f"# {page.title}\nSource {source_marker(0)}: {page.url} "
            f"({page.media_type}, {page.fetched_bytes} bytes)"
        )
        text = f"{header}\n\n{body or '(the page has no readable text)'}"
        snippet = " ".join(body.split())[:300]
        return ToolOutput(text, (SourceSeen(page.url, page.title, snippet, "read"),))


def plain_text(markdown: str) -> str:
    """Markdown without images, link targets and emphasis marks (headings and lists stay)."""
    text = _IMAGE.sub(r"\1", markdown)
    text = _LINK.sub(r"\1", text)
    return _EMPHASIS.sub(r"\2", text)
