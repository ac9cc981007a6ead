"""What the memory handlers use (`api.memory`, `adapters/http/routes/memories.py`): the service,
who may use which namespace, and the memories read model."""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from adapters.http.reads.read_your_writes import ViewWaiter
from application.bridge import SyncBridge
from application.memories import Memories
from application.memory_access import Grant, MemoryAccess, NamespaceNotFound
from domain.memory_values import (
    MemoryNotFound,
    Namespace,
)
from domain.roles import Actor
from projections.memories import MemoriesView


@dataclass(frozen=True)
class MemoryApi:
    """What the memory handlers use (`api.memory`): the service, who may do what, and the
    read model (each blocking call through the bridge)."""

    memories: Memories
    access: MemoryAccess
    view: MemoriesView
    waiter: ViewWaiter
    bridge: SyncBridge

    async def grant(self, who: Actor, namespace: Namespace, *, write: bool) -> Grant:
        return await self.bridge(self.access.check, who, namespace, write=write)

    async def readable(self, who: Actor, namespace: str | None) -> list[Namespace]:
        """The namespace asked for (if the caller may read it), else all they may read."""
        if namespace is None:
            return await self.bridge(self.access.readable, who)
        wanted = Namespace.parse(namespace)
        await self.grant(who, wanted, write=False)
        return [wanted]

    async def locate(self, who: Actor, memory_id: UUID, *, write: bool) -> Namespace:
        """The namespace holding the memory, if the caller may read it (and change it,
        if `write`): `MemoryNotFound` when it may not see it, `Forbidden` when it may
        only read it."""
        where = await self.bridge(self.view.locate, memory_id)
        if where is None:  # perhaps just written by someone else: let the view catch up
            await self.waiter.caught_up(MemoriesView.name)
            where = await self.bridge(self.view.locate, memory_id)
        if where is None:
            raise MemoryNotFound(memory_id)
        namespace = Namespace.parse(where)
        try:
            await self.grant(who, namespace, write=write)
        except NamespaceNotFound:
            raise MemoryNotFound(memory_id) from None
        return namespace
