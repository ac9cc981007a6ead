"""Bodies of the operational endpoints."""

from __future__ import annotations

import msgspec


class RelayHealth(msgspec.Struct):
    active: bool
    position: int
    lag: int


class ProjectionHealth(msgspec.Struct):
    name: str
    position: int
    lag: int
    error: str | None = None


class KeeperHealth(msgspec.Struct):
    """The memory keeper: how far it has kept what sessions taught, and (in the process
    that runs it) why its last pass stopped, if it did."""

    position: int
    lag: int
    error: str | None = None


class Health(msgspec.Struct):
    status: str
    head: int
    relay: RelayHealth | None = None
    projections: list[ProjectionHealth] = msgspec.field(default_factory=list)
    memory_keeper: KeeperHealth | None = None
