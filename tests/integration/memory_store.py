"""Memories kept by real `MemoryNamespace` aggregates in an event store, with the memories
view applying the stored log as its runner would: the harness of the memory index tests.

Vectors come from the deterministic hashing embedder, whose "meaning" is shared words and
word pieces (character trigrams).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from uuid import UUID, uuid4

from eventsourcing.application import AggregateNotFoundError, Application

from adapters.embeddings import HashingEmbedder
from adapters.postgres.eventstore import datastore_of, eventstore_env
from application.ports import Embedder, MemoryHit
from domain.authors import ByUser
from domain.memories import MemoryNamespace
from domain.memory_values import MemorySource, Namespace
from projections.memories import MemoriesView
from projections.memory_vectors import EmbeddingModels
from projections.vector_graphs import GraphKeeper
from projections.view import decode

ALICE = ByUser(UUID(int=1))


def embedder_for(model: str) -> Embedder:
    found = re.fullmatch(r"hashing-(\d+)", model)
    if found is None:
        raise ValueError(f"no embedder of {model} in these tests")
    return HashingEmbedder(dimension=int(found[1]))


class Memories:
    """Memories kept by aggregates in an event store, and the view fed from its log."""

    def __init__(self, database_url: str, *, embedder: Embedder | None = None) -> None:
        env = eventstore_env(database_url, pool_size=2, max_overflow=4)
        self.store = Application[UUID](env=env)
        self.datastore = datastore_of(database_url, pool_size=8)
        configured = embedder or HashingEmbedder()
        self.models = EmbeddingModels(
            configured, lambda m: configured if m == configured.model else embedder_for(m)
        )
        self.view = MemoriesView(self.datastore, self.models)
        self.view.create_table()
        self.graphs: GraphKeeper | None = None  # a pass after each feed, when set
        self._feeding = threading.Lock()

    def remember(
        self, namespace: Namespace, texts: Sequence[str], category: str = "knowledge",
        *, expires_at: datetime | None = None, now: datetime | None = None,
    ) -> list[UUID]:  # fmt: skip
        aggregate = self.namespace(namespace)
        when = now or datetime.now(UTC)
        ids = [
            aggregate.remember(t, category, MemorySource(), expires_at, ALICE, when).memory_id
            for t in texts
        ]
        self.store.save(aggregate)
        self.feed()
        return ids

    def forget(self, namespace: Namespace, memory_id: UUID) -> None:
        aggregate = self.namespace(namespace)
        aggregate.forget(memory_id, ALICE)
        self.store.save(aggregate)
        self.feed()

    def namespace(self, namespace: Namespace) -> MemoryNamespace:
        try:
            found = self.store.repository.get(namespace.aggregate_id)
        except AggregateNotFoundError:
            return MemoryNamespace.create(namespace, None)
        assert isinstance(found, MemoryNamespace)
        return found

    def feed(self) -> None:
        """Apply what the log holds after the view's position, in one batch."""
        with self._feeding:
            log = self.store.recorder.select_notifications(self.view.position() + 1, 10_000)
            mapper = self.store.mapper
            self.view.apply_batch([(n.id, decode(mapper, "memories", n.id, n)) for n in log])
            if self.graphs is not None:
                assert not self.graphs.keep().busy

    def search(
        self, query: str, *namespaces: Namespace, k: int = 5, categories: list[str] | None = None
    ) -> list[UUID]:
        return [h.memory_id for h in self.hits(query, *namespaces, k=k, categories=categories)]

    def hits(
        self, query: str, *namespaces: Namespace, k: int = 5, categories: list[str] | None = None
    ) -> list[MemoryHit]:
        return self.view.search(query, [str(n) for n in namespaces], k=k, categories=categories)

    def close(self) -> None:
        self.store.close()
        self.datastore.close()


def user() -> Namespace:
    return Namespace("user", uuid4())


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def graph_state(memories: Memories) -> dict[tuple[str, str], bool]:
    """Each index listed in vector_graphs: its namespace and model ("" for its words), and
    whether it is valid."""
    with memories.datastore.get_connection() as conn:
        rows = conn.execute(
            "SELECT g.grp, g.model, coalesce(i.indisvalid, false) AS valid FROM vector_graphs g "
            "LEFT JOIN pg_class c ON c.relname = g.index_name "
            "LEFT JOIN pg_index i ON i.indexrelid = c.oid"
        ).fetchall()
    return {(str(r["grp"]), str(r["model"])): bool(r["valid"]) for r in rows}


def indexes_of_vectors(memories: Memories, table: str = "memory_vectors") -> set[str]:
    with memories.datastore.get_connection() as conn:
        rows = conn.execute(
            "SELECT indexname FROM pg_indexes WHERE tablename = %s", (table,)
        ).fetchall()
    return {str(r["indexname"]) for r in rows}


def guarded(target: Callable[[], None], failures: list[BaseException]) -> Callable[[], None]:
    def run() -> None:
        try:
            target()
        except BaseException as e:
            failures.append(e)

    return run


WORDS = [
    "billing", "search", "design", "support", "sales", "platform", "mobile", "data",
    "security", "growth", "finance", "legal", "research", "infra", "quality", "docs",
] * 4  # fmt: skip
