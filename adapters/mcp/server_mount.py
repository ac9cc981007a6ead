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
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import cast

from litestar.handlers import ASGIRouteHandler, asgi
from litestar.types import Receive, Scope, Send
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import Receive as StarletteReceive
from starlette.types import Scope as StarletteScope
from starlette.types import Send as StarletteSend

from adapters.http.deps import Api
from adapters.mcp.server import mcp_server

PATH = "/mcp"


def mcp_endpoint(
    api: Api,
) -> tuple[ASGIRouteHandler, Callable[[], AbstractAsyncContextManager[None]]]:
    """The route handler, and the context that runs the MCP requests' task group (the
    app's lifespan enters it: requests are served while it is open)."""
    manager = StreamableHTTPSessionManager(
        app=mcp_server(api),
        stateless=True,
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )

    @asgi(PATH, include_in_schema=False, copy_scope=True)
    async def endpoint(scope: Scope, receive: Receive, send: Send) -> None:
        await manager.handle_request(
            cast(StarletteScope, scope), cast(StarletteReceive, receive), cast(StarletteSend, send)
        )

    return endpoint, manager.run
