"""The `create_doc` tool: a report as the session's artifact, Markdown or PDF.

The report ends with a `## Sources` section written from the session's own sources:
one line per source its `[n]` markers cite, `[n] Title - URL`, in the order of first
citation and with the session's numbers, so the text's markers still match. A marker
with no such source is listed apart, never as a link, and the model is told.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, Protocol
from urllib.parse import urlsplit

import msgspec
from msgspec import Meta

from application.tools.base import Tool, ToolContext
from domain.sources import NumberedSource, cited_numbers

MARKDOWN = "text/markdown; charset=utf-8"
PDF = "application/pdf"
NO_SOURCE = "Cited without a retrieved source (these markers match no source of the session):"


class DocumentRenderer(Protocol):
    """Turns a report's Markdown into the bytes of a PDF."""

    async def render_pdf(self, title: str, markdown: str) -> bytes: ...


class CreateDocArgs(msgspec.Struct, forbid_unknown_fields=True):
    title: Annotated[str, Meta(min_length=1, max_length=200)]
    content: Annotated[str, Meta(min_length=1, max_length=200_000)]
    format: Literal["markdown", "pdf"] = "markdown"


class CreateDoc(Tool[CreateDocArgs]):
    name = "create_doc"
    description = (
        "Write the final report as a document the user can download: Markdown (default) "
        "or PDF. Cite sources in the text with their numbers as [n]; a '## Sources' "
        "section listing every cited source is added for you, so do not write one."
    )
    Args = CreateDocArgs
    # Its only effects are a blob and an event, the same on a replay.
    replayable = True
    timeout = 120.0  # a long PDF takes a while to lay out

    def __init__(self, renderer: DocumentRenderer) -> None:
        self.renderer = renderer

    async def run(self, args: CreateDocArgs, context: ToolContext) -> str:
        known = await context.notes.sources()
        cited = cited_numbers(args.content)
        listed = [known[n] for n in cited if n in known]
        unknown = [n for n in cited if n not in known]
        title = " ".join(args.title.split())
        markdown = with_title(title, args.content) + sources_section(listed, unknown)
        if args.format == "pdf":
            data = await self.renderer.render_pdf(title, markdown)
            name, media_type = f"{slug(title)}.pdf", PDF
        else:
            data, name, media_type = markdown.encode(), f"{slug(title)}.md", MARKDOWN
        ref = await context.notes.create_artifact("report", name, data, media_type)
        lines = [f"created {name} (artifact {ref.artifact_id}, {ref.size} bytes)"]
        lines += ["Sources listed:", *(source_line(s) for s in listed)] if listed else []
        if unknown:
            lines.append(
                f"Unknown markers {', '.join(f'[{n}]' for n in unknown)}: no source of this "
                "session has that number; they are listed as unsourced, not linked. Fix the "
                "text and create the document again if they should cite a source."
            )
        return "\n".join(lines)


def with_title(title: str, content: str) -> str:
    """The content under a `# title` heading, unless it starts with a heading of its own."""
    body = content.strip("\n")
    return body if body.startswith("# ") else f"# {title}\n\n{body}"


def sources_section(listed: list[NumberedSource], unknown: list[int]) -> str:
    if not listed and not unknown:
        return "\n"
    # Blank lines between entries: in Markdown each is then a line of its own.
    parts = ["## Sources", *(source_line(s) for s in listed)]
    if unknown:
        parts += [NO_SOURCE, *(f"[{n}]" for n in unknown)]
    return "\n\n\n" + "\n\n".join(parts) + "\n"


def source_line(source: NumberedSource) -> str:
    title = " ".join(source.title.split()) or urlsplit(source.url).hostname or source.url
    return f"[{source.number}] {title} - {source.url}"


def slug(title: str) -> str:
    """A file name's stem from a title: lower case words joined by '-', at most 80 chars."""
    words = re.sub(r"[^\w]+", "-", title.lower()).strip("-_")
    return words[:80].rstrip("-_") or "report"
