"""The `read_source` tool: more of a page already read, from its stored full text.

`read_url` keeps a page's whole text in the blob store under its source number, while
the context gets only its head and tail when it is long. `read_source` reads any part of
that text again by character offset, without fetching the page a second time. A part
fits the context whole (`application/tools/parts.py`).
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from application.ports import BlobNotFound, ToolExecutionError
from application.tools.base import Tool, ToolContext, source_marker
from application.tools.parts import MAX_LENGTH, Length, part_end
from domain.sources import NumberedSource


class ReadSourceArgs(msgspec.Struct, forbid_unknown_fields=True):
    source: Annotated[int, Meta(ge=1, description="The source's number: 3 for [3].")]
    offset: Annotated[
        int,
        Meta(
            ge=0,
            description=(
                "Where to start, in characters of the page's stored text (0: its start). "
                "Each answer says the offset of the next part."
            ),
        ),
    ] = 0
    length: Length = MAX_LENGTH


class ReadSourceError(ToolExecutionError):
    """A part of a source that cannot be read; `code` says why."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class ReadSource(Tool[ReadSourceArgs]):
    name = "read_source"
    description = (
        "Read more of a page already read with read_url, by its source number [n], "
        f"without fetching it again: up to {MAX_LENGTH} characters of its full text from "
        "an offset. A long page read with read_url shows only its start and end; read the "
        "rest here, part by part. A source only seen in search results has no text yet: "
        "read_url it first."
    )
    Args = ReadSourceArgs

    async def run(self, args: ReadSourceArgs, context: ToolContext) -> str:
        source = _find(await context.notes.sources(), args.source)
        text = await _text(source, context)
        end = part_end(len(text), args.offset, args.length, f"source [{source.number}]")
        part = text[args.offset : end].replace(source_marker(0), f"[{source.number}]")
        return f"{_header(source, args.offset, end, len(text))}\n\n{part}"


async def _text(source: NumberedSource, context: ToolContext) -> str:
    if source.blob_ref is None:
        raise ReadSourceError(
            "SOURCE_NOT_READ",
            f"source [{source.number}] ({source.url}) was only seen in search results: "
            f"its snippet is all there is ({source.snippet[:300]!r}). Read the page with "
            "read_url first; it keeps its number.",
        )
    try:
        data = await context.notes.stored_text(source.blob_ref)
    except (BlobNotFound, ValueError):
        raise ReadSourceError(
            "SOURCE_TEXT_MISSING",
            f"the stored text of source [{source.number}] is missing from the blob store "
            f"(blob {source.blob_ref}): read {source.url} again with read_url",
        ) from None
    return data.decode("utf-8", errors="replace")


def _find(sources: dict[int, NumberedSource], number: int) -> NumberedSource:
    found = sources.get(number)
    if found is not None:
        return found
    if not sources:
        message = (
            "the session has no sources yet: find pages with web_search, read one with read_url"
        )
    else:
        read = [n for n, s in sorted(sources.items()) if s.blob_ref is not None]
        message = (
            f"there is no source [{number}]: the sources are {_ranges(sorted(sources))}; "
            f"read in full (readable here): {_ranges(read) if read else 'none yet'}"
        )
    raise ReadSourceError("UNKNOWN_SOURCE", message)


def _header(source: NumberedSource, start: int, end: int, total: int) -> str:
    title = " ".join(source.title.split())
    title = title if len(title) <= 150 else title[:147] + "..."
    url = source.url if len(source.url) <= 250 else source.url[:247] + "..."
    if end < total:
        more = f'next part: read_source {{"source": {source.number}, "offset": {end}}}'
    else:
        more = "the end of the page"
    return f"Source [{source.number}]: {title}\n{url}\nCharacters {start}-{end} of {total} ({more})"


def _ranges(numbers: list[int]) -> str:
    """Sorted numbers as runs: [1, 2, 3, 5] -> "1-3, 5"."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)
