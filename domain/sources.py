"""A session's sources: every page its tools saw, by the number citations use.

Numbers come from `SourceRecorded` events (`AgentSession.record_sources`): the first
sighting of a URL takes the next number, and reading it later adds its text under the
same number. A citation `[n]` the model writes is resolved here, or found wanting.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from domain.session import AgentSession as S

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
            before = found.get(e.number)
            found[e.number] = NumberedSource(
                e.number,
                e.url,
                e.title or (before.title if before else ""),
                e.snippet or (before.snippet if before else ""),
                e.blob_ref or (before.blob_ref if before else None),
            )
    return found


def cited_numbers(text: str) -> list[int]:
    """The `[n]` markers of a text, in order of first use, each once."""
    seen: dict[int, None] = {}
    for match in MARKER.finditer(text):
        seen.setdefault(int(match.group(1)), None)
    return list(seen)
