"""Long-term memory, as the API and the agent's tools use it: remember, update, forget,
read and search, each in a namespace the caller may use.

The memories are `MemoryNamespace` aggregates in the accounts application's store (so
their events travel the accounts' log, beside the users, teams and workspaces that
own them); the searchable copy is the `MemoryIndex` read model. A command answers
after the index has applied what it wrote (or after `wait` seconds, when the read
models lag), so what was remembered is found by the very next search.

Near duplicates: before a new memory is added, the index is asked for the closest
memory of the namespace; above `duplicate_similarity` that memory is updated instead.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeVar
from uuid import UUID

from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.persistence import IntegrityError

from application.bridge import SyncBridge
from application.ports import MemoryHit, MemoryIndex
from domain.authors import Author
from domain.errors import Conflict
from domain.memories import MemoryNamespace
from domain.memory_values import (
    InvalidMemory,
    Memory,
    MemoryNotFound,
    MemorySource,
    Namespace,
    check_category,
    check_text,
)

DUPLICATE_SIMILARITY = 0.92  # cosine similarity above which a new memory is the same one
WAIT = 2.0  # seconds a command waits for the index to show what it wrote
MAX_K = 100
MAX_QUERY = 2000  # characters of a search query
RETRIES = 3
SNAPSHOT_INTERVAL = 500  # events between a namespace's snapshots
T = TypeVar("T")

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Remembered:
    """What a `remember` did: the memory, and whether it was already there (updated)."""

    memory: Memory
    updated: bool
    notification_id: int


def check_k(k: object) -> int:
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= MAX_K:
        raise InvalidMemory("k", f"k must be a whole number from 1 to {MAX_K}")
    return k


class Memories:
    """Memories by namespace; who may use which namespace is the caller's check
    (`application.memory_access`)."""

    def __init__(
        self,
        store: Application[UUID],
        index: MemoryIndex,
        bridge: SyncBridge,
        *,
        duplicate_similarity: float = DUPLICATE_SIMILARITY,
        wait: float = WAIT,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.store = store
        self.index = index
        self.bridge = bridge
        self.duplicate_similarity = duplicate_similarity
        self.wait = wait
        self.clock = clock

    # -- changing -----------------------------------------------------------------

    async def remember(
        self,
        namespace: Namespace,
        text: str,
        category: str,
        by: Author,
        *,
        organization_id: UUID | None,
        source: MemorySource | None = None,
        expires_at: datetime | None = None,
    ) -> Remembered:
        """A new memory, or an existing one updated: the same text (case and spacing
        aside), or one close enough in meaning. Nothing is written for bad input, nor for
        a session event the namespace already learned from (`AlreadyLearned`)."""
        text, checked = check_text(text), check_category(category)
        near = await self.bridge(self.index.nearest, str(namespace), text)
        similar = near[0] if near is not None and near[1] >= self.duplicate_similarity else None

        def change(aggregate: MemoryNamespace) -> tuple[Memory, bool]:
            before = len(aggregate.memories)
            memory = aggregate.remember(
                text, checked, source or MemorySource(), expires_at, by, self.clock(),
                similar=similar,
            )  # fmt: skip
            return memory, len(aggregate.memories) == before

        (memory, updated), notification_id = await self._change(namespace, organization_id, change)
        return Remembered(memory, updated, notification_id)

    async def update(
        self,
        namespace: Namespace,
        memory_id: UUID,
        by: Author,
        *,
        text: str | None = None,
        category: str | None = None,
        expires_at: datetime | None = None,
        clear_expiry: bool = False,
    ) -> Memory:
        def change(aggregate: MemoryNamespace) -> Memory:
            return aggregate.update(
                memory_id, by, self.clock(), text=text, category=category,
                expires_at=expires_at, clear_expiry=clear_expiry,
            )  # fmt: skip

        memory, _ = await self._change(namespace, None, change, must_exist=memory_id)
        return memory

    async def forget(self, namespace: Namespace, memory_id: UUID, by: Author) -> Memory:
        """Forget the memory: gone from every search once this answers; its events stay."""
        memory, _ = await self._change(
            namespace, None, lambda a: a.forget(memory_id, by), must_exist=memory_id
        )
        return memory

    # -- reading ------------------------------------------------------------------

    async def learned(self, namespace: Namespace, source: MemorySource) -> bool:
        """Whether the namespace ever learned from the session event `source` names."""
        aggregate = await self.bridge(self._namespace, namespace)
        return aggregate is not None and aggregate.learned(source)

    async def get(self, namespace: Namespace, memory_id: UUID) -> Memory:
        aggregate = await self.bridge(self._namespace, namespace)
        if aggregate is None:
            raise MemoryNotFound(memory_id)
        return aggregate.get(memory_id)

    async def list(
        self, namespace: Namespace, *, category: str | None = None, include_expired: bool = False
    ) -> builtins.list[Memory]:
        """The namespace's memories, oldest first."""
        wanted = check_category(category) if category is not None else None
        aggregate = await self.bridge(self._namespace, namespace)
        if aggregate is None:
            return []
        now = self.clock()
        return sorted(
            (
                m
                for m in aggregate.memories.values()
                if (wanted is None or m.category == wanted)
                and (include_expired or not m.expired(now))
            ),
            key=lambda m: (m.created_at, str(m.memory_id)),
        )

    async def search(
        self,
        query: str,
        namespaces: Sequence[Namespace],
        *,
        k: int = 5,
        categories: Sequence[str] | None = None,
    ) -> builtins.list[MemoryHit]:
        """The best `k` unexpired memories of the namespaces for `query`."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidMemory("query", "a search needs a query: say what to look for")
        if len(query) > MAX_QUERY:
            raise InvalidMemory("query", f"a search query has at most {MAX_QUERY} characters")
        k = check_k(k)
        wanted = [check_category(c) for c in categories] if categories else None
        if not namespaces:
            return []
        return await self.bridge(
            self.index.search, query.strip(), [str(n) for n in namespaces], k=k, categories=wanted
        )

    # -- on the store (blocking parts run on the bridge) ----------------------------

    async def _change(
        self,
        namespace: Namespace,
        organization_id: UUID | None,
        change: Callable[[MemoryNamespace], T],
        *,
        must_exist: UUID | None = None,
    ) -> tuple[T, int]:
        result, notification_id = await self.bridge(
            self._save_change, namespace, organization_id, change, must_exist
        )
        if notification_id:
            await self.bridge(self.index.wait_for, notification_id, self.wait)
        return result, notification_id

    def _save_change(
        self,
        namespace: Namespace,
        organization_id: UUID | None,
        change: Callable[[MemoryNamespace], T],
        must_exist: UUID | None,
    ) -> tuple[T, int]:
        """Apply `change` to the namespace (made if need be) and save it; again if
        another writer saved first. A change that raises saves nothing."""
        for attempt in range(RETRIES):
            aggregate = self._namespace(namespace)
            if aggregate is None:
                if must_exist is not None:
                    raise MemoryNotFound(must_exist)
                aggregate = MemoryNamespace.create(namespace, organization_id)
            result = change(aggregate)
            try:
                recordings = self.store.save(aggregate)
            except IntegrityError:
                if attempt == RETRIES - 1:
                    raise Conflict("the memories changed meanwhile; try again") from None
                continue
            if recordings:
                self._snapshot_now_and_then(
                    aggregate, recordings[0].domain_event.originator_version
                )
            return result, recordings[-1].notification.id if recordings else 0
        raise AssertionError("unreachable")

    def _snapshot_now_and_then(self, aggregate: MemoryNamespace, first_saved: int) -> None:
        """Snapshot the namespace as saved when the save crossed a multiple of the
        interval: a process that first uses a large namespace then folds the snapshot and
        fewer than `SNAPSHOT_INTERVAL` events, not its whole history. The snapshot is a
        cache: one that cannot be written is only logged."""
        if self.store.snapshots is None:
            return
        if aggregate.version // SNAPSHOT_INTERVAL == (first_saved - 1) // SNAPSHOT_INTERVAL:
            return
        try:
            self.store.snapshots.put([MemoryNamespace.Snapshot.take(aggregate)])
        except Exception:
            log.warning("could not snapshot %s at version %d", aggregate.namespace,
                        aggregate.version, exc_info=True)  # fmt: skip

    def _namespace(self, namespace: Namespace) -> MemoryNamespace | None:
        try:
            aggregate: object = self.store.repository.get(namespace.aggregate_id)
        except AggregateNotFoundError:
            return None
        if not isinstance(aggregate, MemoryNamespace):
            raise TypeError(f"{namespace} is not a memory namespace: {aggregate!r}")
        return aggregate
