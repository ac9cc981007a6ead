"""The store's threads (`SyncBridge`), counting what is sent through them."""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec, TypeVar

from application.bridge import SyncBridge

P = ParamSpec("P")
T = TypeVar("T")


class CountingBridge(SyncBridge):
    """A `SyncBridge` that counts its calls (`calls`): what did not stay on the loop."""

    def __init__(self, threads: int = 2) -> None:
        super().__init__(threads)
        self.calls = 0

    async def __call__(self, fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        self.calls += 1
        return await super().__call__(fn, *args, **kwargs)
