"""A session's sources: every page its tools saw, by the number citations use.

Numbers come from `SourceRecorded` events (`AgentSession.record_sources`): the first
sighting of a URL takes the next number, and reading it later adds its text under the
same number. A citation `[n]` the model writes is resolved here, or found wanting.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from domain.conversation import TextBlock, TurnBlock
from domain.session import AgentSession as S
from domain.values import CitedSource

MARKER = re.compile(r"\[(\d{1,4})\]")  # a citation the model wrote: [3]


@dataclass(frozen=True)
class NumberedSource:
    number: int
    url: str
    title: str
    snippet: str
    blob_ref: str | None  # its full text, once read


def numbered_sources(log: Iterable[object]) -> dict[int, NumberedSource]:
    """The sources of a session's events by number (a later sighting adds to the earlier)."""
    found: dict[int, NumberedSource] = {}
    for e in log:
        if isinstance(e, S.SourceRecorded):
            add_source(found, e)
    return found


def add_source(found: dict[int, NumberedSource], e: S.SourceRecorded) -> None:
    """`found` with the sighting `e`: what it says, else what was known of its number."""
    before = found.get(e.number)
    found[e.number] = NumberedSource(
        e.number,
        e.url,
        e.title or (before.title if before else ""),
        e.snippet or (before.snippet if before else ""),
        e.blob_ref or (before.blob_ref if before else None),
    )


def cited_numbers(text: str) -> list[int]:
    """The `[n]` markers of a text, in order of first use, each once."""
    seen: dict[int, None] = {}
    for match in MARKER.finditer(text):
        seen.setdefault(int(match.group(1)), None)
    return list(seen)


def resolve_citations(
    content: Sequence[TurnBlock],
    sources: Mapping[int, NumberedSource],
) -> tuple[list[CitedSource], list[int]]:
    """What a turn's text cites, in order of first citation, and the `[n]` markers it
    wrote that name no source of the session (never to be shown as links).

    A citation is a `[n]` marker in the text, or the model's own citation of a search
    result (which names the page by URL).
    """
    by_url = {s.url: s for s in sources.values()}
    cited: dict[int, CitedSource] = {}
    unknown: dict[int, None] = {}
    for block in content:
        if not isinstance(block, TextBlock):
            continue
        for number in cited_numbers(block.text):
            source = sources.get(number)
            if source is None:
                unknown.setdefault(number, None)
            elif number not in cited:
                cited[number] = CitedSource(number, source.url, source.title, source.snippet)
        for citation in block.citations:
            source = by_url.get(citation.source)
            if source is not None and source.number not in cited:
                cited[source.number] = CitedSource(
                    source.number, source.url, source.title, citation.cited_text
                )
    return list(cited.values()), list(unknown)
