"""Who is calling: a bearer access token on every request but the public ones."""

from __future__ import annotations

from litestar.connection import ASGIConnection
from litestar.datastructures import State
from litestar.middleware import AbstractAuthenticationMiddleware, AuthenticationResult

from adapters.http.deps import api_of
from adapters.http.errors import ApiError
from adapters.http.reads.tenant_reads import SCOPE_KEY, caller, caller_of
from adapters.postgres.scoped_datastore import Caller
from application import log_context
from application.account_store import set_as_of
from application.accounts import AccountService
from application.tokens import Principal

PUBLIC = [
    "^/health$",
    "^/readiness$",
    "^/metrics$",
    "^/schema",
    "^/api/v1/docs$",
    "^/api/v1/auth/(register|login|refresh)$",
    "^/api/v1/ws$",  # authenticates itself: a query parameter or its first message
]


class BearerTokenAuthentication(AbstractAuthenticationMiddleware):
    """Sets `request.user` to the caller's `Principal`; 401 without a valid access token
    or API key (`tdk_...`, in the same header).

    Browsers' EventSource cannot send headers, so the SSE stream also takes the token
    as an `access_token` query parameter.
    """

    async def authenticate_request(
        self, connection: ASGIConnection[object, object, object, State]
    ) -> AuthenticationResult:
        scheme, _, token = connection.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            token = (
                connection.query_params.get("access_token", "") if _is_stream(connection) else ""
            )
            if not token:
                raise ApiError(401, "a bearer access token is required", "UNAUTHORIZED")
        principal = await authenticate(connection.app.state, token.strip())
        connection.scope["state"][SCOPE_KEY] = caller.get()  # for the MCP endpoint
        return AuthenticationResult(user=principal, auth=token)


async def authenticate(state: State, token: str) -> Principal:
    """Who the access token or API key speaks for (`AuthError` when nobody); a key's use
    is counted. The push socket (`ws`) authenticates with it too. The caller's
    organizations are set for the rest of the request (`adapters.http.reads.tenant_reads`)."""
    api = api_of(state)
    access = api.access
    # The request's checks read the accounts as of the log's head now: one statement
    # instead of one per aggregate they look at (`application.account_store`).
    set_as_of(await access.log_head())
    principal, who = await access.bridge(_resolve, access.accounts, token)
    caller.set(who)
    log_context.set_user(principal.user_id)  # on the request's log lines (not the token)
    if principal.api_key_id is not None:
        api.key_uses.note(principal.api_key_id)
    return principal


def _resolve(accounts: AccountService, token: str) -> tuple[Principal, Caller]:
    principal = accounts.authenticate(token)
    return principal, caller_of(accounts, principal)


def _is_stream(connection: ASGIConnection[object, object, object, State]) -> bool:
    return connection.scope.get("method") == "GET" and connection.url.path.endswith("/stream")
