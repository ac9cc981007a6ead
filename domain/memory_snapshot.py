"""A memory namespace's snapshot: its state as plain JSON, and back.

A namespace of thousands of memories is slow to fold from its events (about a second
for 10,000 from Postgres), which every process pays on its first use of it. Its
snapshot holds the memories as rows of strings and numbers (ids as hex, times as ISO
text), the sources it learned from, and its name; what is derived (the same-text
index) is rebuilt on load. `MemoryNamespace.Snapshot` uses these.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any
from uuid import UUID

from domain.authors import Author, ByAgent, ByUser
from domain.memory_values import (
    Memory,
    MemorySource,
    Namespace,
    check_category,
    same_text_key,
)

State = dict[str, Any]
Row = list[str | int | None]


def to_snapshot(state: State) -> State:
    """The namespace's state (its `vars`, envelope removed) as plain JSON values."""
    memories: dict[UUID, Memory] = state["memories"]
    learned: set[tuple[UUID, int]] = state["_learned"]
    return {
        "_created_on": state["_created_on"],
        "_modified_on": state["_modified_on"],
        "namespace": str(state["namespace"]),
        "organization_id": state["organization_id"],
        "memories": [_row(m) for m in memories.values()],
        "learned": [[session.hex, version] for session, version in sorted(learned)],
    }


def from_snapshot(state: State) -> State:
    """The namespace's state as its events would have folded it."""
    namespace = Namespace.parse(state["namespace"])
    ids = _Ids()
    memories = {m.memory_id: m for m in (_memory(namespace, row, ids) for row in state["memories"])}
    return {
        "_created_on": state["_created_on"],
        "_modified_on": state["_modified_on"],
        "namespace": namespace,
        "organization_id": state["organization_id"],
        "memories": memories,
        "_by_text": {same_text_key(m.text): m.memory_id for m in memories.values()},
        "_learned": {(ids(session), version) for session, version in state["learned"]},
    }


def _row(m: Memory) -> Row:
    source = m.source
    return [
        m.memory_id.hex, m.text, m.category,
        source.session_id.hex if source.session_id else None, source.version, source.document,
        _time(m.expires_at), _time(m.created_at), *_author(m.created_by),
        _time(m.updated_at), *_author(m.updated_by), m.revision,
    ]  # fmt: skip


def _memory(namespace: Namespace, row: Row, ids: _Ids) -> Memory:
    (memory_id, text, category, session, version, document, expires_at, created_at,
     created_kind, created_id, updated_at, updated_kind, updated_id, revision) = row  # fmt: skip
    return Memory(
        ids(memory_id), namespace, str(text), check_category(category),
        MemorySource(ids(session) if session else None, _int(version), _str(document)),
        _parsed(expires_at), _at(created_at), _by(created_kind, ids(created_id)),
        _at(updated_at), _by(updated_kind, ids(updated_id)), int(str(revision)),
    )  # fmt: skip


class _Ids(dict[object, UUID]):
    """Each id of a snapshot parsed once (authors and sessions repeat across memories)."""

    def __call__(self, hex_: object) -> UUID:
        found = self.get(hex_)
        if found is None:
            found = self[hex_] = UUID(str(hex_))
        return found


def _author(author: Author) -> tuple[str, str]:
    match author:
        case ByUser(user_id=user_id):
            return "user", user_id.hex
        case ByAgent(session_id=session_id):
            return "agent", session_id.hex


def _by(kind: object, id_: UUID) -> Author:
    return ByUser(id_) if kind == "user" else ByAgent(id_)


def _time(at: datetime | None) -> str | None:
    return None if at is None else at.isoformat()


def _parsed(text: object) -> datetime | None:
    return None if text is None else datetime.fromisoformat(str(text))


def _at(text: object) -> datetime:
    return datetime.fromisoformat(str(text))


def _int(value: object) -> int | None:
    return None if value is None else int(str(value))


def _str(value: object) -> str | None:
    return None if value is None else str(value)
