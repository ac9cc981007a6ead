"""`/mcp` in the Litestar app: the MCP server's Streamable HTTP endpoint, mounted.

Stateless (each POST stands alone, no session kept in the process), so any API replica
answers any request of a client. The API's authentication runs before it (a request
without a valid token or key is a 401 with the usual error body); DNS-rebinding checks
are off because no request is authorized by anything a browser sends by itself.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from litestar.handlers import ASGIRouteHandler, asgi
from litestar.types import Receive, Scope, Send
from mcp.server.transport_security import TransportSecuritySettings

from adapters.http.deps import Api
from adapters.mcp.server import mcp_server

PATH = "/mcp"


def mcp_endpoint(
    api: Api,
) -> tuple[ASGIRouteHandler, Callable[[], AbstractAsyncContextManager[None]]]:
    """The route handler, and the context that runs the MCP session manager (the app's
    lifespan enters it)."""
    server = mcp_server(lambda: api)
    app = server.streamable_http_app(
        streamable_http_path="/",
        stateless_http=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )

    @asgi(PATH, is_mount=True, include_in_schema=False)
    async def endpoint(scope: Scope, receive: Receive, send: Send) -> None:
        if not scope.get("path"):
            scope["path"] = "/"
        await app(scope, receive, send)  # type: ignore[arg-type]

    return endpoint, server.session_manager.run
