"""What a memory is, apart from the namespace that keeps it: its namespace's name and
id, a session's scope of namespaces, where it came from, its checked text, category and
expiry, and the errors that bad input raises."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, get_args
from uuid import UUID, uuid5

from domain.authors import Author
from domain.errors import Conflict, InvalidValue, NotFound

MemoryCategory = Literal["preference", "knowledge", "history"]
CATEGORIES: tuple[MemoryCategory, ...] = get_args(MemoryCategory)
NamespaceKind = Literal["user", "workspace", "team"]
NAMESPACE_KINDS: tuple[NamespaceKind, ...] = get_args(NamespaceKind)

MAX_TEXT = 4000  # characters of one memory
MAX_DOCUMENT = 2000  # characters of a document source's name or URL

# Fixed forever: the id of every namespace's aggregate is derived from it.
_MEMORY = UUID("2b0d8f5e-7c41-4a9e-9d3b-6a1e5f0c8b27")
_SPACES = re.compile(r"\s+")


class InvalidMemory(InvalidValue):
    """Text, category, namespace or expiry that a memory cannot have: HTTP 400
    `VALIDATION_ERROR`, naming the field ("`category`: unknown category ...")."""

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"`{field}`: {problem}")
        self.field = field


class AlreadyLearned(Conflict):
    """The namespace already learned from this session event (kept, merged or forgotten
    since): learning from it again would undo what happened to that memory."""

    code = "ALREADY_LEARNED"

    def __init__(self, session_id: UUID, version: int) -> None:
        super().__init__(f"already learned from version {version} of session {session_id}")


class MemoryNotFound(NotFound):
    """No such memory in the namespace (or the caller may not see it)."""

    code = "MEMORY_NOT_FOUND"

    def __init__(self, memory_id: UUID | str) -> None:
        super().__init__(f"no memory {memory_id}")
        self.memory_id = memory_id


@dataclass(frozen=True)
class Namespace:
    """Whose memory: a user's own, a workspace's, or a team's shared knowledge base."""

    kind: NamespaceKind
    scope_id: UUID  # the user, workspace or team

    def __str__(self) -> str:
        return f"{self.kind}:{self.scope_id}"

    @property
    def aggregate_id(self) -> UUID:
        return uuid5(_MEMORY, str(self))

    @classmethod
    def parse(cls, text: str) -> Namespace:
        """`user:<uuid>`, `workspace:<uuid>` or `team:<uuid>`; `InvalidMemory` otherwise."""
        kind, sep, scope = (text or "").strip().partition(":")
        if not sep or kind not in NAMESPACE_KINDS:
            raise InvalidMemory(
                "namespace",
                f"unknown namespace {text!r}: give user:<id>, workspace:<id> or team:<id>",
            )
        try:
            scope_id = UUID(scope)
        except ValueError:
            raise InvalidMemory("namespace", f"namespace {text!r} does not end in an id") from None
        return cls(kind, scope_id)


@dataclass(frozen=True)
class MemoryScope:
    """The namespaces a session's agent uses: its owner's, its workspace's and its
    team's (a session started before sessions named their team has none)."""

    owner_id: UUID
    workspace_id: UUID
    organization_id: UUID | None
    team_id: UUID | None

    @property
    def namespaces(self) -> list[Namespace]:
        found = [Namespace("user", self.owner_id), Namespace("workspace", self.workspace_id)]
        return found + ([Namespace("team", self.team_id)] if self.team_id else [])

    def namespace(self, kind: str | None) -> Namespace:
        """The scope's namespace of this kind (default: the owner's own)."""
        for namespace in self.namespaces:
            if namespace.kind == (kind or "user"):
                return namespace
        raise InvalidMemory(
            "namespace", f"unknown namespace {kind!r}: choose user, workspace or team"
        )


def check_text(text: object) -> str:
    """The memory's text, trimmed; `InvalidMemory` when empty or longer than `MAX_TEXT`."""
    if not isinstance(text, str):
        raise InvalidMemory("text", "a memory's text must be a string")
    trimmed = unicodedata.normalize("NFC", text).strip().replace("\x00", "")
    if not trimmed:
        raise InvalidMemory("text", "a memory's text is empty: say what to remember")
    if len(trimmed) > MAX_TEXT:
        raise InvalidMemory(
            "text",
            f"a memory's text has {len(trimmed)} characters; the limit is {MAX_TEXT}: "
            "keep one fact or preference per memory",
        )
    return trimmed


def check_category(category: object) -> MemoryCategory:
    if category not in CATEGORIES:
        raise InvalidMemory(
            "category", f"unknown category {category!r}: choose one of {', '.join(CATEGORIES)}"
        )
    return category


def check_expiry(expires_at: datetime | None, now: datetime) -> datetime | None:
    if expires_at is None:
        return None
    if expires_at.tzinfo is None:
        raise InvalidMemory(
            "expires_at", "an expiry needs a time zone (for example 2027-01-01T00:00:00Z)"
        )
    if expires_at <= now:
        raise InvalidMemory("expires_at", "an expiry must be in the future")
    return expires_at


def same_text_key(text: str) -> str:
    """What two texts share when they are the same memory: case and spacing aside."""
    return _SPACES.sub(" ", text.casefold()).strip()


@dataclass(frozen=True)
class MemorySource:
    """Where a memory came from: the event of a session it was learned at, a document,
    or (both empty) what a user told the API directly."""

    session_id: UUID | None = None
    version: int | None = None  # of the session's event it came from
    document: str | None = None  # a file path or URL

    def __post_init__(self) -> None:
        if (self.session_id is None) != (self.version is None):
            raise InvalidMemory("source", "a session source names both the session and its version")
        if self.document is not None and len(self.document) > MAX_DOCUMENT:
            raise InvalidMemory(
                "source_document", f"a document source has at most {MAX_DOCUMENT} characters"
            )


@dataclass(frozen=True)
class Memory:
    """A memory as it is now."""

    memory_id: UUID
    namespace: Namespace
    text: str
    category: MemoryCategory
    source: MemorySource
    expires_at: datetime | None
    created_at: datetime
    created_by: Author
    updated_at: datetime
    updated_by: Author
    revision: int  # 1 when remembered; each update adds one

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now
