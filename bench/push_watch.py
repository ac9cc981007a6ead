"""The process of `bench.push_channel.PushWatcher`: one push socket (`WS /api/v1/ws`)
following many sessions, noting when each `session_update` arrives. It speaks to its
parent as `bench.sse_watch`'s reader process does (a JSON config on stdin; a JSON line
once subscribed; "stop"; the arrivals as JSON, keyed by the session's index in the
list it was given), and imports nothing of the project, so it starts in half a second.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from urllib.parse import quote

from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed


class _Socket:
    """One socket following `sessions`; `deflate`: offer permessage-deflate, as browsers do."""

    def __init__(self, url: str, sessions: list[str], token: str, deflate: bool) -> None:
        ws = url.replace("http://", "ws://", 1).replace("https://", "wss://", 1)
        self.url = f"{ws}/api/v1/ws?access_token={quote(token)}"
        self.sessions = sessions
        self.index = {sid: i for i, sid in enumerate(sessions)}
        self.arrivals: list[tuple[int, int, float]] = []
        self.failures: list[str] = []
        self.ended = 0
        self.deflate = deflate

    async def subscribe(self, socket: ClientConnection) -> int:
        """Subscribe to every session; how many the server answered with their state."""
        await socket.send(json.dumps({"type": "subscribe", "session_ids": self.sessions}))
        waiting = set(self.sessions)
        while waiting:
            message = json.loads(await socket.recv())
            if message["type"] == "error":
                self.failures.append(f"{message['error_code']}: {message['detail']}")
                waiting.discard(message.get("session_id"))
            elif message["type"] == "session_update":
                waiting.discard(message["session_id"])
        return len(self.sessions) - len(self.failures)

    async def read(self, socket: ClientConnection) -> None:
        try:
            async for raw in socket:
                arrived = time.perf_counter()
                message = json.loads(raw)
                if message["type"] == "session_update":
                    s = self.index[message["session_id"]]
                    self.arrivals.append((s, int(message["version"]), arrived))
                elif message["type"] == "error":
                    self.failures.append(f"{message['error_code']}: {message['detail']}")
            self.ended += 1  # the server closed it
        except ConnectionClosed as e:
            self.failures.append(f"closed: {e}")
            self.ended += 1

    async def run(self) -> None:
        """Open and subscribe, report, read until "stop" arrives on stdin, report what came."""
        started = time.perf_counter()
        async with connect(
            self.url,
            max_size=None,
            open_timeout=30,
            compression="deflate" if self.deflate else None,
        ) as socket:
            ready = await self.subscribe(socket)
            seconds = time.perf_counter() - started
            print(json.dumps({"ready": ready, "seconds": seconds, "failures": self.failures}))
            sys.stdout.flush()
            self.failures = []
            reader = asyncio.create_task(self.read(socket))
            await asyncio.to_thread(sys.stdin.readline)
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
        print(
            json.dumps({"arrivals": self.arrivals, "failures": self.failures, "ended": self.ended})
        )


def follow_main() -> None:
    config = json.loads(sys.stdin.readline())
    socket = _Socket(config["url"], config["sessions"], config["token"], config["deflate"])
    asyncio.run(socket.run())


if __name__ == "__main__" and sys.argv[1:] == ["follow"]:
    follow_main()
