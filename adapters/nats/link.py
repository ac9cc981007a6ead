"""The process's one NATS connection, made once NATS answers and `None` until then.

Everything that talks to NATS (the event streams, the live deltas, the run queue, the
session feed) is built with the link, before it connects, and asks it for the client
when it needs one: `link()` is the connected client or `None`.
"""

from __future__ import annotations

import contextlib

from nats.aio.client import Client as NATS
from nats.errors import Error as NatsError

from adapters.nats.connection import connect_nats


class NatsLink:
    """The connection to the NATS server at `url`, once `connect()` has made it."""

    def __init__(self, url: str, *, name: str = "tokendance") -> None:
        self.url = url
        self.name = name
        self._client: NATS | None = None

    def __call__(self) -> NATS | None:
        return self._client

    async def connect(self) -> NATS:
        """Connect, retrying until NATS answers (later drops reconnect by themselves)."""
        if self._client is None:
            self._client = await connect_nats(self.url, name=self.name)
        return self._client

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            # With NATS already gone, closing the client fails: nothing is left to close.
            with contextlib.suppress(NatsError, OSError):
                await client.close()
