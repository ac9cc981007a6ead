"""`/mcp` in the Litestar app: the MCP server's Streamable HTTP endpoint.

The app's middleware runs first, as for every route: authentication (no valid bearer
access token or API key: 401 with the API's error body, before the MCP layer reads a
byte), the rate limits (each POST counts as a request) and the metrics.

Stateless: every POST stands alone (no `Mcp-Session-Id`, nothing kept in this
process between requests), so any API replica answers any request of a client and a
replica's restart loses no client's session. Nothing of MCP needs the state here: a
tool call's progress goes back on its own POST's response stream, and TokenDance sends
clients no requests of its own. The 2026-07-28 protocol is stateless by design, and
the SDK serves it on the same endpoint. DNS-rebinding checks are off: no request is
authorized by anything a browser sends by itself (the token is a header).

The server starts on the endpoint's first request: the SDK is a second of imports that
a process which is never asked for MCP does not pay, at start or ever.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, cast

from litestar.handlers import ASGIRouteHandler, asgi
from litestar.types import Receive, Scope, Send
from starlette.types import Receive as StarletteReceive
from starlette.types import Scope as StarletteScope
from starlette.types import Send as StarletteSend

from adapters.http.deps import Api

if TYPE_CHECKING:  # loaded on the first request
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

PATH = "/mcp"


class LazyMcpServer:
    """The MCP server on `api`, started by its first request, stopped with the app."""

    def __init__(self, api: Api) -> None:
        self.api = api
        self._manager: StreamableHTTPSessionManager | None = None
        self._starting = asyncio.Lock()  # bound to a loop only when first awaited
        self._stop: asyncio.Event | None = None
        self._running: asyncio.Task[None] | None = None

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        manager = self._manager or await self._start()
        await manager.handle_request(
            cast(StarletteScope, scope), cast(StarletteReceive, receive), cast(StarletteSend, send)
        )

    async def _start(self) -> StreamableHTTPSessionManager:
        async with self._starting:
            if self._manager is None:
                # Imported on a thread: the other requests go on meanwhile.
                server = await asyncio.to_thread(importlib.import_module, "adapters.mcp.server")
                manager: StreamableHTTPSessionManager = server.session_manager(self.api)
                ready, self._stop = asyncio.Event(), asyncio.Event()
                self._running = asyncio.create_task(self._run(manager, ready), name="mcp")
                await ready.wait()
                self._manager = manager
        return self._manager

    async def _run(self, manager: StreamableHTTPSessionManager, ready: asyncio.Event) -> None:
        assert self._stop is not None
        async with manager.run():  # the task group the requests' tasks run in
            ready.set()
            await self._stop.wait()

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[None]:
        """While the app serves (its lifespan): on the way out, the server stops."""
        try:
            yield
        finally:
            if self._stop is not None and self._running is not None:
                self._stop.set()
                await self._running


def mcp_endpoint(
    api: Api,
) -> tuple[ASGIRouteHandler, Callable[[], AbstractAsyncContextManager[None]]]:
    """The route handler, and the context the app's lifespan holds open while it serves."""
    server = LazyMcpServer(api)

    @asgi(PATH, include_in_schema=False, copy_scope=True)
    async def endpoint(scope: Scope, receive: Receive, send: Send) -> None:
        await server.handle(scope, receive, send)

    return endpoint, server.serving
