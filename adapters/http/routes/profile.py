"""The caller's own account (`/api/v1/auth/me`, `/api/v1/auth/password`)."""

from __future__ import annotations

import msgspec
from litestar import Controller, delete, get, patch, post
from litestar.params import JSONBody
from litestar.status_codes import HTTP_204_NO_CONTENT

from adapters.http.deps import Api, ApiDep, Caller
from adapters.http.middleware.login_limits import client_address
from adapters.http.routes.auth_routes import workspaces_out
from application.tenants import Profile
from application.tokens import Principal
from domain.account_errors import Forbidden
from domain.account_values import UNSET
from schemas import usage as wire
from schemas.api import TokenOut
from schemas.teams import PasswordBody, ProfilePatch


class ProfileController(Controller):
    path = "/api/v1/auth"
    tags = ["auth"]

    @get("/me")
    async def me(self, request: Caller, api: ApiDep) -> wire.MeOut:
        """The caller's profile, and its organizations, teams and workspaces (with its
        role in each; through an API key, as far as the key reaches)."""
        return await _me(api, await api.bridge(api.accounts.profile, request.user))

    @patch("/me")
    async def change_me(
        self, data: JSONBody[ProfilePatch], request: Caller, api: ApiDep
    ) -> wire.MeOut:
        """Change the name, avatar_url (null clears it) or preferences (a JSON object of
        at most 16 KiB, replaced whole)."""
        _login_only(request.user, "change a profile")
        avatar = UNSET if isinstance(data.avatar_url, msgspec.UnsetType) else data.avatar_url
        await api.bridge(
            api.accounts.change_profile, request.user.user_id, name=data.name,
            avatar_url=avatar, preferences=data.preferences,
        )  # fmt: skip
        return await _me(api, await api.bridge(api.accounts.profile, request.user))

    @delete("/me", status_code=HTTP_204_NO_CONTENT)
    async def erase_me(self, request: Caller, api: ApiDep) -> None:
        """Erase the caller: its messages, attachments, memories and profile read as
        "[erased]" everywhere from now on, its logins end and its API keys stop. The
        sessions' events stay (their hash chain verifies). Not undoable."""
        _login_only(request.user, "erase its user")
        await api.erasure.erase(request.user.user_id, request.user.user_id)

    @post("/password", status_code=200)
    async def change_password(
        self, data: JSONBody[PasswordBody], request: Caller, api: ApiDep
    ) -> TokenOut:
        """A new password (the current one required; a wrong one counts as a failed
        login). Every login of the user can no longer refresh; the answer is a new
        login's tokens, so this client goes on."""
        _login_only(request.user, "change a password")
        user_id = request.user.user_id
        email = (await api.bridge(api.accounts.profile, request.user)).email
        # Wrong current passwords count as failed logins: a stolen token cannot guess on.
        async with api.login_limits.attempt(email, client_address(request)):
            await api.bridge(
                api.accounts.change_password, user_id, data.old_password, data.new_password
            )
        pair = await api.bridge(api.accounts.new_login, user_id)
        return TokenOut(pair.access_token, pair.token_type, pair.expires_in, pair.refresh_token)


def _login_only(principal: Principal, what: str) -> None:
    if principal.api_key_id is not None:
        raise Forbidden(f"an API key cannot {what}; log in to do it")


async def _me(api: Api, p: Profile) -> wire.MeOut:
    return wire.MeOut(
        id=p.user_id,
        email=p.email,
        name=p.name,
        avatar_url=p.avatar_url,
        preferences=p.preferences or {},
        organizations=[
            wire.OrganizationOut(o.organization_id, o.name, o.role) for o in p.organizations
        ],
        teams=[wire.TeamOut(t.team_id, t.name, t.organization_id, t.role) for t in p.teams],
        workspaces=await workspaces_out(api, p.workspaces),
    )
