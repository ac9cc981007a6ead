"""A client of the push channel (`WS /api/v1/ws`) for end-to-end tests: the `websockets`
library's synchronous client, every message it reads decoded strictly by `schemas.ws`."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from schemas import ws
from tests.e2e.client import Server


@dataclass
class Push:
    """One socket, and every message it has read."""

    connection: ClientConnection
    messages: list[dict[str, object]] = field(default_factory=list)

    @classmethod
    def open(cls, server: Server, token: str | None = None) -> Push:
        url = server.url.replace("http://", "ws://") + "/api/v1/ws"
        if token is not None:
            url += f"?access_token={token}"
        connection = connect(url, open_timeout=10, max_size=None)
        return cls(connection.__enter__())  # closed by `close` (or when collected)

    def send(self, message: object) -> None:
        self.connection.send(message if isinstance(message, str | bytes) else json.dumps(message))

    def subscribe(self, *session_ids: object) -> None:
        self.send({"type": "subscribe", "session_ids": [str(s) for s in session_ids]})

    def until(
        self, wanted: Callable[[dict[str, object]], bool], timeout: float = 20.0
    ) -> dict[str, object]:
        """Read until a message that `wanted` accepts (returned); AssertionError on timeout."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                raw = self.connection.recv(timeout=left)
            except TimeoutError:
                break
            ws.decode_server(raw)  # of the contract, strictly
            message = json.loads(raw)
            self.messages.append(message)
            if wanted(message):
                return message
        raise AssertionError(f"no such message within {timeout}s; read: {self.messages}")

    def of(self, type_: str, **fields: object) -> list[dict[str, object]]:
        """The messages read of that type with those fields."""
        return [
            m for m in self.messages
            if m["type"] == type_ and all(m.get(k) == v for k, v in fields.items())
        ]  # fmt: skip

    def ping(self) -> None:
        """A round trip: everything the server sent before the `pong` is read by then."""
        self.send({"type": "ping"})
        self.until(lambda m: m["type"] == "pong")

    def closed(self, timeout: float = 15.0) -> tuple[int, str]:
        """Read until the server closes; its close code and reason."""
        try:
            self.until(lambda _: False, timeout)
        except ConnectionClosed as e:
            assert e.rcvd is not None, "closed without a close frame"
            return e.rcvd.code, e.rcvd.reason
        raise AssertionError("the server did not close the socket")

    def close(self) -> None:
        self.connection.close()


def kind(type_: str, **fields: object) -> Callable[[dict[str, object]], bool]:
    """A `Push.until` predicate: a message of that type with those fields."""
    return lambda m: m["type"] == type_ and all(m.get(k) == v for k, v in fields.items())
