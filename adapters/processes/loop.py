"""The event loop a process runs on: uvloop's where it is installed, the standard one otherwise."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import TypeVar

T = TypeVar("T")


def run(main: Coroutine[object, object, T]) -> T:
    """`asyncio.run(main)`, on uvloop where installed (not on Windows)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main)
