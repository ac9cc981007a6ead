"""Accounts: register, login, refresh, logout; the caller's workspaces."""

from __future__ import annotations

from uuid import UUID, uuid4

from litestar import Controller, Request, get, patch, post
from litestar.datastructures import State
from litestar.params import FromPath, JSONBody
from litestar.status_codes import HTTP_200_OK, HTTP_201_CREATED, HTTP_204_NO_CONTENT
from msgspec import convert, to_builtins

from adapters.http.deps import Api, ApiDep, Caller
from adapters.http.middleware.login_limits import client_address
from application.accounts import TokenPair, WorkspaceInfo
from domain.account_errors import EmailTaken
from domain.accounts import User
from domain.values import SessionSettings, check_thinking_budget
from schemas import api as wire
from schemas.api import (
    LoginBody,
    RefreshBody,
    RegisterBody,
    RegisterOut,
    TokenOut,
    WorkspaceBody,
    WorkspaceOut,
    WorkspacePage,
)
from schemas.teams import WorkspacePatch


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
        the account, or from the address, 429 RATE_LIMITED
        (adapters/http/middleware/login_limits.py)."""
        async with api.login_limits.attempt(data.email, client_address(request)):
            pair = await api.bridge(api.accounts.login, data.email, data.password)
        return _tokens(pair)

    @post("/refresh", status_code=HTTP_200_OK)
    async def refresh(
        self,
        data: JSONBody[RefreshBody],
        api: ApiDep,
    ) -> TokenOut:
        """New tokens for a refresh token, which is used up (a reused one ends its whole
        family: 401)."""
        return _tokens(await api.bridge(api.accounts.refresh, data.refresh_token))

    @post("/logout", status_code=HTTP_204_NO_CONTENT)
    async def logout(
        self,
        request: Caller,
        api: ApiDep,
    ) -> None:
        """End this login: its access token and its refresh token family stop working."""
        await api.bridge(api.accounts.logout, request.auth)


class WorkspaceController(Controller):
    path = "/api/v1/workspaces"
    tags = ["workspaces"]

    @get("/")
    async def list_workspaces(
        self,
        request: Caller,
        api: ApiDep,
    ) -> WorkspacePage:
        """The caller's workspaces, with its role and how many sessions each holds."""
        found = await api.bridge(api.workspaces.workspaces_of, request.user)
        return WorkspacePage(await workspaces_out(api, found))

    @post("/", status_code=HTTP_201_CREATED)
    async def create_workspace(
        self,
        data: JSONBody[WorkspaceBody],
        request: Caller,
        api: ApiDep,
    ) -> WorkspaceOut:
        """A workspace in a team (`team_id`: every member of the team sees it) or in the
        caller's organization's first team; needs the admin role there."""
        created = await api.bridge(
            api.accounts.create_workspace,
            request.user,
            data.name,
            organization_id=data.organization_id,
            team_id=data.team_id,
        )
        return workspace_out(created, 0)

    @patch("/{workspace_id:uuid}")
    async def change_workspace(
        self,
        workspace_id: FromPath[UUID],
        data: JSONBody[WorkspacePatch],
        request: Caller,
        api: ApiDep,
    ) -> WorkspaceOut:
        """Rename the workspace, or set the defaults of its new sessions (`settings`:
        model, confirmation policy, allowed tools, ...); needs the admin role."""
        settings = None if data.settings is None else SessionSettings.of(to_builtins(data.settings))
        if settings is not None and settings.thinking_budget is not None:
            limit = api.scheduler.runner.settings.max_tokens  # a turn's output, thinking in it
            check_thinking_budget(settings.thinking_budget, limit)
        changed = await api.bridge(
            api.accounts.change_workspace, request.user, workspace_id, name=data.name,
            settings=settings,
        )  # fmt: skip
        return (await workspaces_out(api, [changed]))[0]


async def workspaces_out(api: Api, found: list[WorkspaceInfo]) -> list[WorkspaceOut]:
    counts = await api.bridge(api.views.sessions.session_counts, [w.workspace_id for w in found])
    return [workspace_out(w, counts.get(w.workspace_id, 0)) for w in found]


def workspace_out(w: WorkspaceInfo, session_count: int) -> WorkspaceOut:
    return WorkspaceOut(
        id=w.workspace_id, name=w.name, organization_id=w.organization_id, team_id=w.team_id,
        role=w.role, created_at=w.created_at, session_count=session_count,
        settings=convert(w.settings.to_json(), wire.SessionSettings),
    )  # fmt: skip
