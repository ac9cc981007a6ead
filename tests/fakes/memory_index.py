"""A `MemoryIndex` for the engine alone: it reads the namespaces' aggregates from the
store and searches them by brute force (vector similarity and shared words, fused by
reciprocal rank, like the Postgres read model), so the engine's memory works on the
in-memory event store."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application

from application.ports import Embedder, MemoryHit
from domain.memories import MemoryNamespace
from domain.memory_values import Memory, Namespace

RRF_K = 60


class InMemoryMemoryIndex:
    def __init__(self, store: Application[UUID], embedder: Embedder) -> None:
        self.store = store
        self.embedder = embedder

    def search(
        self,
        query: str,
        namespaces: Sequence[str],
        *,
        k: int,
        categories: Sequence[str] | None = None,
    ) -> list[MemoryHit]:
        memories = [
            m for m in self._memories(namespaces) if categories is None or m.category in categories
        ]
        if not memories:
            return []
        (q,) = self.embedder.embed([query])
        vectors = self.embedder.embed([m.text for m in memories])
        similarity = {m.memory_id: _cosine(q, v) for m, v in zip(memories, vectors, strict=True)}
        by_vector = sorted(memories, key=lambda m: -similarity[m.memory_id])
        words = _words(query)
        matched = [m for m in memories if words & _words(m.text)]
        by_words = sorted(matched, key=lambda m: -len(words & _words(m.text)))
        score: dict[UUID, float] = {}
        for ranked in (by_vector, by_words):
            for rank, m in enumerate(ranked, 1):
                score[m.memory_id] = score.get(m.memory_id, 0.0) + 1 / (RRF_K + rank)
        best = sorted(memories, key=lambda m: (-score[m.memory_id], str(m.memory_id)))[:k]
        return [_hit(m, score[m.memory_id], similarity[m.memory_id]) for m in best]

    def nearest(self, namespace: str, text: str) -> tuple[UUID, float] | None:
        memories = self._memories([namespace])
        if not memories:
            return None
        (q,) = self.embedder.embed([text])
        vectors = self.embedder.embed([m.text for m in memories])
        scored = [(_cosine(q, v), m.memory_id) for m, v in zip(memories, vectors, strict=True)]
        similarity, memory_id = max(scored)
        return memory_id, similarity

    def wait_for(self, notification_id: int, timeout: float) -> bool:
        return True  # it reads the store itself

    def _memories(self, namespaces: Sequence[str]) -> list[Memory]:
        now = datetime.now(UTC)
        found: list[Memory] = []
        for name in namespaces:
            try:
                aggregate = self.store.repository.get(Namespace.parse(name).aggregate_id)
            except AggregateNotFoundError:
                continue
            assert isinstance(aggregate, MemoryNamespace)
            found += [m for m in aggregate.memories.values() if not m.expired(now)]
        return found


def _hit(m: Memory, score: float, similarity: float) -> MemoryHit:
    return MemoryHit(
        m.memory_id, str(m.namespace), m.category, m.text, score, similarity,
        m.source.session_id, m.source.version, m.source.document,
    )  # fmt: skip


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w{3,}", text.casefold()))


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0
