"""Every request fails fast on a busy pool (`adapters.postgres.busy_store`): 503 with
`Retry-After` after one wait for a connection, not after the recorders' ten."""

from __future__ import annotations

from litestar.enums import ScopeType
from litestar.middleware import ASGIMiddleware
from litestar.types import ASGIApp, Receive, Scope, Send

from adapters.postgres.busy_store import fail_fast


class FailFastMiddleware(ASGIMiddleware):
    scopes = (ScopeType.HTTP, ScopeType.WEBSOCKET)

    async def handle(self, scope: Scope, receive: Receive, send: Send, next_app: ASGIApp) -> None:
        fail_fast()  # for this request's task and what it calls (the bridge copies it)
        await next_app(scope, receive, send)
