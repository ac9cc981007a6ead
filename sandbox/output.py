"""A sandboxed process's stdout or stderr, kept up to a cap and drained past it."""

from __future__ import annotations

import asyncio

CHUNK = 64 * 1024
# How far past its cap a stream may run before the run is ended ("output"): far
# enough that a chatty program finishes, near enough that 100 MB never arrive.
FLOOD_FACTOR = 4
TAIL = 4096


class CappedStream:
    """Keeps the first `cap` bytes of a stream, counts the rest, and says (`flooded`)
    when the stream has gone `FLOOD_FACTOR` times past its cap."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.total = 0
        self._flooded = asyncio.Event()
        self._kept = bytearray()
        self._tail = b""

    async def drain(self, reader: asyncio.StreamReader) -> None:
        """Read `reader` to its end."""
        while chunk := await reader.read(CHUNK):
            room = self.cap - len(self._kept)
            if room > 0:
                self._kept += chunk[:room]
            self._tail = (self._tail + chunk)[-TAIL:]
            self.total += len(chunk)
            if self.total > self.cap * FLOOD_FACTOR:
                self._flooded.set()

    async def flooded(self) -> None:
        """Returns once the stream has gone far past its cap."""
        await self._flooded.wait()

    @property
    def truncated(self) -> bool:
        return self.total > self.cap

    def text(self) -> str:
        """What was kept, as text (a character cut by the cap is replaced)."""
        return self._kept.decode("utf-8", errors="replace")

    def tail(self) -> str:
        """The stream's last bytes (kept or not), where a traceback names the error."""
        return self._tail.decode("utf-8", errors="replace")
