"""Reading a long text part by part (`read_file`, `read_source`): how long a part may be,
and where one ends.

A part is at most what the engine keeps of a tool's output in the context
(`SUMMARY_LIMIT`) less room for the header, so a part always arrives whole: a longer
output would be cut to its head and tail like any other.
"""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta

from application.ports import ToolExecutionError
from domain.policies import SUMMARY_LIMIT

HEADER_ROOM = 600  # characters kept for a part's header: titles and URLs are cut to fit
MAX_LENGTH = SUMMARY_LIMIT - HEADER_ROOM

Length = Annotated[int, Meta(ge=1, le=MAX_LENGTH, description="How many characters to read.")]


class OffsetPastEnd(ToolExecutionError):
    code = "OFFSET_PAST_END"


def part_end(total: int, offset: int, length: int, of: str) -> int:
    """Where the part of `length` characters from `offset` ends, in a text of `total`
    characters (`of` says whose, for the failure of an offset past its end)."""
    if offset > 0 and offset >= total:
        raise OffsetPastEnd(
            f"offset {offset} is past the end of {of}, which has {total} characters: "
            f"read from an offset below {total}"
        )
    return min(total, offset + length)
