"""Long-term memory: what the agent learned and what a user prefers, kept by namespace.

A namespace is whose memory it is: a user's own (`user:<id>`), a workspace's
(`workspace:<id>`), or a team's shared knowledge base (`team:<id>`). Each namespace is
one `MemoryNamespace` aggregate, whose id is derived from its name, so its events are
the whole story of that memory: remembered, updated, forgotten, each with who did it
(a user, or the agent of a session) and where the memory came from (a session and the
version of the event it was learned at, or a document). Forgetting removes a memory
from every read model; the event that forgot it stays in the log.

Exact duplicates are caught here: remembering the text of a memory the namespace holds
(ignoring case and spacing) updates that memory instead of adding one. Near duplicates
are the application's to find (it asks the vector index) and to name (`similar`).

What a session taught is kept once: the namespace knows every session event it ever
learned from (a memory's source, or a source noted when it only confirmed a memory),
forgotten memories included, and refuses that event again (`AlreadyLearned`). So keeping
what sessions learned can be retried after a crash without bringing back a memory a
user forgot or overwriting one a user edited.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from typing import Any, cast
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event
from eventsourcing.domain import Snapshot as AggregateSnapshot

from domain.authors import Author, ByAgent, ByUser, author_of
from domain.memory_snapshot import from_snapshot, to_snapshot
from domain.memory_values import (
    AlreadyLearned,
    InvalidMemory,
    Memory,
    MemoryNotFound,
    MemorySource,
    Namespace,
    check_category,
    check_expiry,
    check_text,
    same_text_key,
)
from domain.value_state import ValueState


class MemoryNamespace(ValueState, Aggregate):
    """The memories of one namespace, by id (frozen `Memory` values: a command's copy
    shares them)."""

    class NamespaceCreated(Aggregate.Created):
        kind: str
        scope_id: UUID
        organization_id: UUID | None  # the tenant (a user's own namespace has none)

    class MemoryRemembered(Aggregate.Event):
        memory_id: UUID
        text: str
        category: str
        source_session_id: UUID | None
        source_version: int | None
        source_document: str | None
        expires_at: datetime | None
        user_id: UUID | None  # exactly one of the two is set
        session_id: UUID | None
        # Whose personal data the text is, sealed with that user's key: a user's own
        # namespace's user, else the user who wrote it (None: unsealed).
        owner_id: UUID | None

        class_version = 2

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            state.setdefault("owner_id", None)

    class MemoryUpdated(Aggregate.Event):
        """The memory's text, category and expiry as they are now (all of them)."""

        memory_id: UUID
        text: str
        category: str
        expires_at: datetime | None
        user_id: UUID | None
        session_id: UUID | None
        owner_id: UUID | None  # as `MemoryRemembered`'s

        class_version = 2

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            state.setdefault("owner_id", None)

    class SourceNoted(Aggregate.Event):
        """What a session event taught was already a memory: that memory was updated
        (or confirmed as it is), and the event is noted as learned from."""

        memory_id: UUID
        source_session_id: UUID
        source_version: int

    class MemoryForgotten(Aggregate.Event):
        memory_id: UUID
        user_id: UUID | None
        session_id: UUID | None

    class Snapshot(AggregateSnapshot):
        """The namespace's state as plain JSON (`domain.memory_snapshot`)."""

        @classmethod
        def take(cls, aggregate: Any) -> MemoryNamespace.Snapshot:
            taken = AggregateSnapshot.take(aggregate)
            return cls(
                originator_id=taken.originator_id, originator_version=taken.originator_version,
                timestamp=taken.timestamp, topic=taken.topic, state=to_snapshot(taken.state),
            )  # fmt: skip

        def mutate(self, _: None) -> MemoryNamespace:
            plain = AggregateSnapshot(
                originator_id=self.originator_id, originator_version=self.originator_version,
                timestamp=self.timestamp, topic=self.topic, state=from_snapshot(self.state),
            )  # fmt: skip
            return cast(MemoryNamespace, plain.mutate(None))

    @event(NamespaceCreated)
    def __init__(self, kind: str, scope_id: UUID, organization_id: UUID | None) -> None:
        self.namespace = Namespace(kind, scope_id)  # type: ignore[arg-type]  # from `create`
        self.organization_id = organization_id
        self.memories: dict[UUID, Memory] = {}
        self._by_text: dict[str, UUID] = {}
        self._learned: set[tuple[UUID, int]] = set()  # (session, version) ever learned from

    @classmethod
    def create(cls, namespace: Namespace, organization_id: UUID | None) -> MemoryNamespace:
        return cls._create(
            cls.NamespaceCreated,
            id=namespace.aggregate_id,
            kind=namespace.kind,
            scope_id=namespace.scope_id,
            organization_id=organization_id,
        )

    # -- queries ------------------------------------------------------------------

    def get(self, memory_id: UUID) -> Memory:
        found = self.memories.get(memory_id)
        if found is None:
            raise MemoryNotFound(memory_id)
        return found

    def same_text(self, text: str) -> Memory | None:
        """The memory with this text (case and spacing aside), if there is one."""
        found = self._by_text.get(same_text_key(text))
        return self.memories[found] if found is not None else None

    def learned(self, source: MemorySource) -> bool:
        """Whether this session event was learned from before (never, for other sources)."""
        return _learned_key(source) in self._learned

    # -- commands -----------------------------------------------------------------

    def remember(
        self,
        text: str,
        category: str,
        source: MemorySource,
        expires_at: datetime | None,
        by: Author,
        now: datetime,
        *,
        similar: UUID | None = None,
    ) -> Memory:
        """A new memory, or an existing one updated to this text, category and expiry:
        the one with the same text, else `similar` (close in meaning) if it is still here.
        A session event already learned from is refused (`AlreadyLearned`)."""
        text, checked = check_text(text), check_category(category)
        expires_at = check_expiry(expires_at, now)
        key = _learned_key(source)
        if key is not None and key in self._learned:
            raise AlreadyLearned(*key)
        same = self.same_text(text)
        existing = same.memory_id if same is not None else similar
        if existing is not None and existing in self.memories:
            memory = self.update(existing, by, now, text=text, category=checked,
                                 expires_at=expires_at)  # fmt: skip
            if key is not None:
                self._noted(memory.memory_id, *key)
            return memory
        memory_id = uuid5(self.id, str(self.version + 1))
        user_id, session_id = _ids(by)
        self._remembered(
            memory_id, text, checked, source.session_id, source.version, source.document,
            expires_at, user_id, session_id, self._owner(user_id),
        )  # fmt: skip
        return self.memories[memory_id]

    def update(
        self,
        memory_id: UUID,
        by: Author,
        now: datetime,
        *,
        text: str | None = None,
        category: str | None = None,
        expires_at: datetime | None = None,
        clear_expiry: bool = False,
    ) -> Memory:
        """Change what is given; the same values again record nothing. Another memory's
        text is refused (`InvalidMemory`): forget one of the two instead."""
        current = self.get(memory_id)
        new_text = check_text(text) if text is not None else current.text
        new_category = check_category(category) if category is not None else current.category
        if clear_expiry:
            new_expiry = None
        elif expires_at is not None:
            new_expiry = check_expiry(expires_at, now)
        else:
            new_expiry = current.expires_at
        other = self.same_text(new_text)
        if other is not None and other.memory_id != memory_id:
            raise InvalidMemory("text", f"memory {other.memory_id} already says this")
        if (new_text, new_category, new_expiry) == (
            current.text,
            current.category,
            current.expires_at,
        ):
            return current
        user_id, session_id = _ids(by)
        self._updated(
            memory_id, new_text, new_category, new_expiry, user_id, session_id,
            self._owner(user_id),
        )  # fmt: skip
        return self.memories[memory_id]

    def _owner(self, author: UUID | None) -> UUID | None:
        """Whose personal data a memory written here by `author` is (None: no one's)."""
        return self.namespace.scope_id if self.namespace.kind == "user" else author

    def forget(self, memory_id: UUID, by: Author) -> Memory:
        current = self.get(memory_id)
        user_id, session_id = _ids(by)
        self._forgotten(memory_id, user_id, session_id)
        return current

    # -- what the events do -------------------------------------------------------

    @event(MemoryRemembered)
    def _remembered(
        self,
        memory_id: UUID,
        text: str,
        category: str,
        source_session_id: UUID | None,
        source_version: int | None,
        source_document: str | None,
        expires_at: datetime | None,
        user_id: UUID | None,
        session_id: UUID | None,
        owner_id: UUID | None,
    ) -> None:
        by = author_of(user_id, session_id)
        source = MemorySource(source_session_id, source_version, source_document)
        self.memories[memory_id] = Memory(
            memory_id, self.namespace, text, category, source, expires_at,  # type: ignore[arg-type]
            self.modified_on, by, self.modified_on, by, 1,
        )  # fmt: skip
        self._by_text[same_text_key(text)] = memory_id
        key = _learned_key(source)
        if key is not None:
            self._learned.add(key)

    @event(MemoryUpdated)
    def _updated(
        self,
        memory_id: UUID,
        text: str,
        category: str,
        expires_at: datetime | None,
        user_id: UUID | None,
        session_id: UUID | None,
        owner_id: UUID | None,
    ) -> None:
        current = self.memories[memory_id]
        self._by_text.pop(same_text_key(current.text), None)
        self.memories[memory_id] = replace(
            current,
            text=text,
            category=category,  # type: ignore[arg-type]  # checked by `update`
            expires_at=expires_at,
            updated_at=self.modified_on,
            updated_by=author_of(user_id, session_id),
            revision=current.revision + 1,
        )
        self._by_text[same_text_key(text)] = memory_id

    @event(SourceNoted)
    def _noted(self, memory_id: UUID, source_session_id: UUID, source_version: int) -> None:
        self._learned.add((source_session_id, source_version))

    @event(MemoryForgotten)
    def _forgotten(self, memory_id: UUID, user_id: UUID | None, session_id: UUID | None) -> None:
        gone = self.memories.pop(memory_id)
        self._by_text.pop(same_text_key(gone.text), None)


def _learned_key(source: MemorySource) -> tuple[UUID, int] | None:
    """The session event a source names, if it names one."""
    if source.session_id is None or source.version is None:
        return None
    return source.session_id, source.version


def _ids(by: Author) -> tuple[UUID | None, UUID | None]:
    match by:
        case ByUser(user_id=user_id):
            return user_id, None
        case ByAgent(session_id=session_id):
            return None, session_id


MemoryEvent = (
    MemoryNamespace.NamespaceCreated
    | MemoryNamespace.MemoryRemembered
    | MemoryNamespace.MemoryUpdated
    | MemoryNamespace.SourceNoted
    | MemoryNamespace.MemoryForgotten
)
MEMORY_EVENT_CLASSES: tuple[type[MemoryEvent], ...] = MemoryEvent.__args__
