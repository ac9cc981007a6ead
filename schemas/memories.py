"""Wire formats of long-term memory (`/api/v1/memories`) and episodic search
(`/api/v1/search`). New fields always get defaults.

Request fields that the domain checks (text, category, namespace, `k`) are plain
strings and numbers here, so a wrong value answers 400 `VALIDATION_ERROR` naming the
field with the domain's explanation rather than a bare type error, as a body of the
wrong shape (a number for `text`, an unknown field) does.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

import msgspec

Category = Literal["preference", "knowledge", "history"]


class MemoryCreate(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Remember something. `namespace`: `user:<id>` (default: the caller's own),
    `workspace:<id>` or `team:<id>`; `category`: preference, knowledge or history."""

    text: str
    category: str
    namespace: str | None = None
    expires_at: datetime | None = None  # with a time zone; in the future
    source_document: str | None = None  # a file path or URL the memory came from


class MemoryPatch(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Change a memory: only the fields given. `expires_at: null` clears the expiry;
    leaving it out keeps it."""

    text: str | None = None
    category: str | None = None
    expires_at: datetime | msgspec.UnsetType | None = msgspec.UNSET


class MemorySearch(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """Search memories by meaning and keywords. No `namespace`: every namespace the
    caller may read."""

    query: str
    k: int = 5  # 1..100
    namespace: str | None = None
    category: str | None = None


class MemoryAuthor(msgspec.Struct, kw_only=True):
    """Who did it: a user (`id` is the user's), or the agent (`id` is its session's)."""

    kind: Literal["user", "agent"]
    id: UUID


class MemorySourceOut(msgspec.Struct, kw_only=True):
    """Where a memory came from: a session's event (its id and version), a document, or
    (all null) what a user told the API."""

    session_id: UUID | None = None
    version: int | None = None
    document: str | None = None


class MemoryOut(msgspec.Struct, kw_only=True):
    """A memory. In the answer to `POST /memories`, `deduplicated` is true when the text
    was already remembered (the same, or close in meaning): that memory was updated
    (status 200) instead of a new one being added (status 201)."""

    id: UUID
    text: str
    category: Category
    namespace: str
    source: MemorySourceOut
    expires_at: datetime | None = None
    created_at: datetime
    updated_at: datetime
    created_by: MemoryAuthor
    updated_by: MemoryAuthor
    revision: int  # 1 when remembered; each update adds one
    deduplicated: bool = False


class MemoryPage(msgspec.Struct, kw_only=True):
    """Memories, newest first, and how many match in all."""

    items: list[MemoryOut]
    total: int
    next_cursor: str | None  # the next page's (None: this is the last)


class MemoryHitOut(msgspec.Struct, kw_only=True):
    """A memory a search found; `score` fuses vector and keyword ranks (higher is better)."""

    id: UUID
    text: str
    category: Category
    namespace: str
    score: float
    source: MemorySourceOut


class MemoryHits(msgspec.Struct, kw_only=True):
    """The best matches first."""

    items: list[MemoryHitOut]


class EpisodeHitOut(msgspec.Struct, kw_only=True):
    """A past session's event that matched: open it at `/sessions/{session_id}` (the
    event's `version` is its SSE id)."""

    session_id: UUID
    version: int
    kind: str  # "session" (its title), "message", "answer" or "finding"
    snippet: str
    score: float


class EpisodeHits(msgspec.Struct, kw_only=True):
    """The best matches first."""

    items: list[EpisodeHitOut]
