"""Accounts: register, login, refresh, logout; the caller's workspaces."""

from __future__ import annotations

from uuid import uuid4

from litestar import Controller, Request, get, post
from litestar.datastructures import State
from litestar.params import JSONBody
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED, HTTP_204_NO_CONTENT

from adapters.http.deps import ApiDep, Caller
from adapters.http.login_limits import client_address, login_limits
from application.accounts import TokenPair, WorkspaceInfo
from domain.account_errors import EmailTaken
from domain.accounts import User
from schemas.api import (
    LoginBody,
    RefreshBody,
    RegisterBody,
    RegisterOut,
    TokenOut,
    WorkspaceBody,
    WorkspaceOut,
)


def _tokens(pair: TokenPair) -> TokenOut:
    return TokenOut(pair.access_token, pair.token_type, pair.expires_in, pair.refresh_token)


class AuthController(Controller):
    path = "/api/v1/auth"
    tags = ["auth"]

    @post("/register", status_code=HTTP_201_CREATED)
    async def register(
        self,
        data: JSONBody[RegisterBody],
        api: ApiDep,
    ) -> RegisterOut:
        """A user with their organization, team and workspace. A taken email answers the
        same (201, the same fields) and changes nothing: no one learns which emails have
        an account. Its user_id is derived from the email anyway; its other ids are new
        and name nothing; its owner's password still logs in, this one does not."""
        try:
            done = await api.bridge(api.accounts.register, data.email, data.password, data.name)
            user_id, organization_id, workspace_id = (
                done.user_id, done.organization_id, done.workspace_id,
            )  # fmt: skip
        except EmailTaken:  # the password was hashed all the same: it takes as long
            user_id, organization_id, workspace_id = User.id_for(data.email), uuid4(), uuid4()
        return RegisterOut(
            user_id=user_id,
            email=data.email.strip().lower(),
            name=data.name,
            organization_id=organization_id,
            workspace_id=workspace_id,
        )

    @post("/login", status_code=HTTP_200_OK)
    async def login(
        self,
        data: JSONBody[LoginBody],
        api: ApiDep,
        request: Request[object, object, State],
    ) -> TokenOut:
        """Tokens of a new login. An unknown email and a wrong password answer alike (401
        INVALID_CREDENTIALS); after TOKENDANCE_LOGIN_ATTEMPTS failures in 15 minutes of
        the account, or from the address, 429 RATE_LIMITED (adapters/http/login_limits.py)."""
        limits = login_limits(request.app)
        async with limits.attempt(data.email, client_address(request)):
            pair = await api.bridge(api.accounts.login, data.email, data.password)
        return _tokens(pair)

    @post("/refresh", status_code=HTTP_200_OK)
    async def refresh(
        self,
        data: JSONBody[RefreshBody],
        api: ApiDep,
    ) -> TokenOut:
        return _tokens(await api.bridge(api.accounts.refresh, data.refresh_token))

    @post("/logout", status_code=HTTP_204_NO_CONTENT)
    async def logout(
        self,
        request: Caller,
        api: ApiDep,
    ) -> None:
        await api.bridge(api.accounts.logout, request.auth)


class WorkspaceController(Controller):
    path = "/api/v1/workspaces"
    tags = ["workspaces"]

    @get("/")
    async def list_workspaces(
        self,
        request: Caller,
        api: ApiDep,
    ) -> list[WorkspaceOut]:
        found = await api.bridge(api.workspaces.workspaces_of, request.user.user_id)
        return [_workspace(w) for w in found]

    @post("/", status_code=HTTP_201_CREATED)
    async def create_workspace(
        self,
        data: JSONBody[WorkspaceBody],
        request: Caller,
        api: ApiDep,
    ) -> WorkspaceOut:
        created = await api.bridge(
            api.accounts.create_workspace,
            request.user.user_id,
            data.name,
            organization_id=data.organization_id,
            team_id=data.team_id,
        )
        return _workspace(created)


def _workspace(w: WorkspaceInfo) -> WorkspaceOut:
    return WorkspaceOut(w.workspace_id, w.name, w.organization_id, w.team_id, w.role)
