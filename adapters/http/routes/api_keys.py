"""API keys (`/api/v1/api-keys`): made and revoked by a logged-in user, shown once."""

from __future__ import annotations

from uuid import UUID

from litestar import Controller, delete, get, post
from litestar.params import FromPath, JSONBody
from litestar.status_codes import HTTP_201_CREATED, HTTP_204_NO_CONTENT

from adapters.http.deps import ApiDep, Caller
from domain.api_keys import ApiKey
from projections.account_queries import ApiKeyUse
from schemas.teams import ApiKeyBody, ApiKeyCreated, ApiKeyOut, ApiKeyPage


class ApiKeyController(Controller):
    path = "/api/v1/api-keys"
    tags = ["api-keys"]

    @post("/", status_code=HTTP_201_CREATED)
    async def create_key(
        self, data: JSONBody[ApiKeyBody], request: Caller, api: ApiDep
    ) -> ApiKeyCreated:
        """A key acting as the caller with at most `role`, only in `workspace_id` if
        given, until `expires_at` if given. The key is in this answer only."""
        issued = await api.bridge(
            api.accounts.create_api_key, request.user, data.name, data.role, data.workspace_id,
            data.expires_at,
        )  # fmt: skip
        k = issued.api_key
        return ApiKeyCreated(
            id=k.id, name=k.name, prefix=k.prefix, key=issued.key, role=k.role,
            workspace_id=k.workspace_id, created_at=k.created_on, expires_at=k.expires_at,
        )  # fmt: skip

    @get("/")
    async def list_keys(self, request: Caller, api: ApiDep) -> ApiKeyPage:
        """The caller's keys, newest first: prefix, role, uses and last use, never the key."""
        keys = await api.bridge(api.accounts.api_keys_of, request.user.user_id)
        uses = await api.bridge(api.key_uses.of, [k.id for k in keys])
        return ApiKeyPage([_out(k, uses.get(k.id, ApiKeyUse(0, None))) for k in keys])

    @delete("/{api_key_id:uuid}", status_code=HTTP_204_NO_CONTENT)
    async def revoke_key(self, api_key_id: FromPath[UUID], request: Caller, api: ApiDep) -> None:
        """Revoke at once: the next request with the key answers 401."""
        await api.bridge(api.accounts.revoke_api_key, request.user, api_key_id)


def _out(k: ApiKey, use: ApiKeyUse) -> ApiKeyOut:
    return ApiKeyOut(
        id=k.id, name=k.name, prefix=k.prefix, role=k.role, workspace_id=k.workspace_id,
        created_at=k.created_on, expires_at=k.expires_at, revoked=k.revoked,
        last_used_at=use.last_used_at, uses=use.uses,
    )  # fmt: skip
