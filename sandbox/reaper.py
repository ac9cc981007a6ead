"""Waiting for a run's PID namespace to be empty.

bubblewrap exits as soon as the sandboxed command does, while its init (PID 1 of the
namespace) is still killing whatever the command left running. The init exits only
once every process of the namespace is gone, so a pidfd on it tells when the run
has truly ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from dataclasses import dataclass
from typing import BinaryIO


@dataclass
class Init:
    """The sandbox's init, as bubblewrap's first status report names it."""

    started: bool  # False: bubblewrap failed before starting anything
    pidfd: int | None  # None: already gone

    @classmethod
    def read(cls, status: BinaryIO) -> Init:
        """Block until bubblewrap reports its init (or ends without one)."""
        try:
            pid = int(json.loads(status.readline() or b"{}")["child-pid"])
        except (KeyError, ValueError, TypeError):
            return cls(started=False, pidfd=None)
        try:
            return cls(started=True, pidfd=os.pidfd_open(pid))
        except ProcessLookupError:
            return cls(started=True, pidfd=None)

    async def gone(self, timeout: float) -> None:
        """Return once the init has exited (so has every process of the run)."""
        if self.pidfd is None:
            return
        loop = asyncio.get_running_loop()
        exited: asyncio.Future[None] = loop.create_future()

        def readable() -> None:  # level-triggered: it fires until the reader is removed
            if not exited.done():
                exited.set_result(None)

        loop.add_reader(self.pidfd, readable)
        try:
            await asyncio.wait_for(exited, timeout)
        finally:
            loop.remove_reader(self.pidfd)

    def close(self) -> None:
        if self.pidfd is not None:
            with contextlib.suppress(OSError):
                os.close(self.pidfd)
            self.pidfd = None
