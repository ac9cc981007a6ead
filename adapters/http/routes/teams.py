"""Teams and their members, and invitations (`/api/v1/teams`, `/api/v1/invitations`).

Commands answer from what they wrote; member lists come from the accounts read model
once it has what the log held when asked (read-your-writes).
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID

from litestar import Controller, Response, delete, get, patch, post
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import FromPath, JSONBody
from litestar.status_codes import HTTP_201_CREATED, HTTP_202_ACCEPTED, HTTP_204_NO_CONTENT

from adapters.http.deps import Api, ApiDep, Caller
from application.team_members import InvitationSent
from application.tenants import TeamInfo
from projections.account_queries import team_created
from schemas.teams import (
    InvitationOut,
    MemberBody,
    MemberOut,
    MemberPage,
    RoleBody,
    TeamBody,
    TeamOut,
    TeamPage,
)


class TeamController(Controller):
    path = "/api/v1/teams"
    tags = ["teams"]

    @post("/", status_code=HTTP_201_CREATED)
    async def create_team(self, data: JSONBody[TeamBody], request: Caller, api: ApiDep) -> TeamOut:
        """A team in the caller's organization; the caller is its first owner."""
        team = await api.bridge(api.accounts.create_team, request.user, data.name)
        return await _team_out(api, team)

    @get("/")
    async def list_teams(self, request: Caller, api: ApiDep) -> TeamPage:
        """The teams the caller has a role in, with that role and their member counts."""
        teams = await api.bridge(api.accounts.teams_of, request.user)
        await api.waiter.caught_up("accounts")
        made = await api.bridge(
            team_created, api.workspaces.view.datastore, [t.team_id for t in teams]
        )
        return TeamPage([_out(t, made.get(t.team_id)) for t in teams])

    @get("/{team_id:uuid}")
    async def get_team(self, team_id: FromPath[UUID], request: Caller, api: ApiDep) -> TeamOut:
        """The team, with the caller's role and its member count."""
        return await _team_out(api, await api.bridge(api.accounts.team_info, request.user, team_id))

    @delete("/{team_id:uuid}", status_code=HTTP_204_NO_CONTENT)
    async def delete_team(self, team_id: FromPath[UUID], request: Caller, api: ApiDep) -> None:
        """Delete the team (owners only) and its workspaces; their sessions stay in the log,
        out of everyone's reach. An organization keeps at least one team (409)."""
        await api.bridge(api.accounts.delete_team, request.user, team_id)

    @get("/{team_id:uuid}/members")
    async def list_members(
        self, team_id: FromPath[UUID], request: Caller, api: ApiDep
    ) -> MemberPage:
        """Everyone with a role in the team (its organization's members included)."""
        await api.bridge(api.accounts.team_of, request.user, team_id)
        await api.waiter.caught_up("accounts")
        rows = await api.bridge(api.workspaces.view.team_members, team_id)
        return MemberPage(
            [MemberOut(user_id=r.user_id, email=r.email, name=r.name, role=r.role,
                       joined_at=r.joined_at) for r in rows]
        )  # fmt: skip

    @post(
        "/{team_id:uuid}/members",
        status_code=HTTP_201_CREATED,
        responses={
            HTTP_201_CREATED: ResponseSpec(
                MemberOut, description="A registered user: now a member", generate_examples=False
            ),
            HTTP_202_ACCEPTED: ResponseSpec(
                InvitationOut,
                description="Invited: the invitation, with its token shown once",
                generate_examples=False,
            ),
        },
    )
    async def add_member(
        self, team_id: FromPath[UUID], data: JSONBody[MemberBody], request: Caller, api: ApiDep
    ) -> Response[MemberOut] | Response[InvitationOut]:
        """A registered user joins at once (201); an unknown email is invited (202, with
        the invitation's token to pass on: it is shown this once)."""
        done = await api.bridge(
            api.accounts.add_team_member, request.user, team_id, data.email, data.role
        )
        if isinstance(done, InvitationSent):
            invitation = InvitationOut(
                invitation_id=done.invitation_id, email=done.email, role=data.role,
                expires_at=done.expires_at, token=done.token,
            )  # fmt: skip
            return Response(invitation, status_code=HTTP_202_ACCEPTED)
        profile = await api.bridge(api.accounts.profile, done.user_id)
        member = MemberOut(
            user_id=done.user_id, email=profile.email, name=profile.name, role=data.role,
            joined_at=done.at,
        )  # fmt: skip
        return Response(member, status_code=HTTP_201_CREATED)

    @patch("/{team_id:uuid}/members/{user_id:uuid}")
    async def change_role(
        self,
        team_id: FromPath[UUID],
        user_id: FromPath[UUID],
        data: JSONBody[RoleBody],
        request: Caller,
        api: ApiDep,
    ) -> MemberOut:
        """Give a member another role in the team (owners and admins)."""
        done = await api.bridge(
            api.accounts.change_team_member_role, request.user, team_id, user_id, data.role
        )
        profile = await api.bridge(api.accounts.profile, done.user_id)
        return MemberOut(user_id=user_id, email=profile.email, name=profile.name, role=data.role)

    @delete("/{team_id:uuid}/members/{user_id:uuid}", status_code=HTTP_204_NO_CONTENT)
    async def remove_member(
        self, team_id: FromPath[UUID], user_id: FromPath[UUID], request: Caller, api: ApiDep
    ) -> None:
        """The member loses access on their next request, and their streams end."""
        await api.bridge(api.accounts.remove_team_member, request.user, team_id, user_id)


class InvitationController(Controller):
    path = "/api/v1/invitations"
    tags = ["teams"]

    @post("/{token:str}/accept", status_code=HTTP_201_CREATED)
    async def accept(self, token: FromPath[str], request: Caller, api: ApiDep) -> MemberOut:
        """Join the team the invitation is for (the caller must be logged in with the
        invited email; an invitation is used once and expires)."""
        done = await api.bridge(api.accounts.accept_invitation, request.user.user_id, token)
        profile = await api.bridge(api.accounts.profile, done.user_id)
        return MemberOut(
            user_id=done.user_id, email=profile.email, name=profile.name, role=done.role,
            joined_at=done.at,
        )  # fmt: skip


async def _team_out(api: Api, team: TeamInfo) -> TeamOut:
    if team.created_at is not None:  # just made: from what was written
        return _out(team, team.created_at)
    await api.waiter.caught_up("accounts")
    made = await api.bridge(team_created, api.workspaces.view.datastore, [team.team_id])
    return _out(team, made.get(team.team_id))


def _out(team: TeamInfo, created_at: datetime | None) -> TeamOut:
    return TeamOut(
        id=team.team_id, name=team.name, organization_id=team.organization_id,
        created_at=created_at, role=team.role, member_count=team.member_count,
    )  # fmt: skip
