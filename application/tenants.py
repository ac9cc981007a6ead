"""Use cases on tenants: organizations, their teams and workspaces, and who may do what.

A caller acts as an `Actor` (a user, maybe through an API key that caps its role and
workspace; a bare user id means the user with all its rights). Its role where it acts
is its organization role or its team role, whichever is higher, capped by its key;
`domain.roles.POLICY` says what each role may do.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from uuid import UUID, uuid4

from application.account_store import AccountStore
from domain.account_errors import (
    OrganizationNotFound,
    TeamNotFound,
    UserNotFound,
    WorkspaceNotFound,
)
from domain.accounts import Organization, User, normalize_email
from domain.roles import Action, Actor, Role, actor_of, allows, capped, check_role, require
from domain.values import SessionSettings


@dataclass(frozen=True)
class WorkspaceInfo:
    workspace_id: UUID
    name: str
    organization_id: UUID
    team_id: UUID
    role: Role
    created_at: datetime
    settings: SessionSettings = field(default_factory=SessionSettings)


@dataclass(frozen=True)
class TeamInfo:
    team_id: UUID
    name: str
    organization_id: UUID
    notification_id: int
    role: Role | None = None  # the caller's, where it asks
    member_count: int = 0
    created_at: datetime | None = None  # known when just made


@dataclass(frozen=True)
class OrganizationInfo:
    organization_id: UUID
    name: str
    role: Role


@dataclass(frozen=True)
class Profile:
    """Who a user is, and where: what a client needs to know its own ids."""

    user_id: UUID
    email: str
    name: str
    organizations: list[OrganizationInfo]
    teams: list[TeamInfo]
    workspaces: list[WorkspaceInfo]
    avatar_url: str | None = None
    preferences: dict[str, object] | None = None


@dataclass(frozen=True)
class Membership:
    organization_id: UUID
    user_id: UUID
    role: Role
    notification_id: int
    at: datetime | None = None  # when the change was recorded, where known


class Tenants(AccountStore):
    """Organizations with their members, teams and workspaces; authorization."""

    # -- what an actor may see ------------------------------------------------------

    def workspaces_of(self, who: UUID | Actor) -> list[WorkspaceInfo]:
        """The actor's workspaces: organizations in joining order, workspaces in creation
        order (a key restricted to a workspace sees that one alone)."""
        actor = actor_of(who)
        found = []
        for organization in self._organizations(actor.user_id):
            for workspace_id in organization.workspaces:
                info = self._workspace_info(actor, organization, workspace_id)
                if info is not None:
                    found.append(info)
        return found

    def workspace_of(self, who: UUID | Actor, workspace_id: UUID) -> WorkspaceInfo:
        """The workspace with its organization, team, settings and the actor's role;
        NotFound if the actor may not see it."""
        actor = actor_of(who)
        for organization in self._organizations(actor.user_id, copy=False):
            info = self._workspace_info(actor, organization, workspace_id)
            if info is not None:
                return info
        raise WorkspaceNotFound(workspace_id)

    def role_in_workspace(self, who: UUID | Actor, workspace_id: UUID) -> Role | None:
        """The actor's role in the workspace, None if it has none (every request asks:
        read from the cached aggregates, building nothing)."""
        actor = actor_of(who)
        if actor.workspace_id is not None and actor.workspace_id != workspace_id:
            return None
        user = self._get(User, actor.user_id, copy=False)
        for organization_id in user.organization_ids if user else ():
            organization = self._get(Organization, organization_id, copy=False)
            if organization is not None and workspace_id in organization.workspaces:
                role = organization.role_in_workspace(actor.user_id, workspace_id)
                return None if role is None else capped(role, actor.role_cap)
        return None

    def authorize(
        self, who: UUID | Actor, workspace_id: UUID, *, write: bool = False,
        action: Action | None = None,
    ) -> Role:  # fmt: skip
        """The actor's role in the workspace if it allows `action` (default: read, or
        write); a workspace it cannot see does not exist, one it may not change is 403."""
        role = self.role_in_workspace(who, workspace_id)
        if role is None:
            raise WorkspaceNotFound(workspace_id)
        wanted: Action = action or ("write" if write else "read")
        if allows(role, wanted):
            return role
        return require(role, wanted, f"{wanted.replace('_', ' ')} in workspace {workspace_id}")

    def organization_roles(self, who: UUID | Actor) -> dict[UUID, Role]:
        """The actor's role over each organization it is an organization member of."""
        return {o.id: role for o, role in self._memberships(who)}

    def teams_of(self, who: UUID | Actor) -> list[TeamInfo]:
        """The teams the actor has a role in, with that role and their member counts."""
        actor = actor_of(who)
        return [
            _team_info(o, team_id, role)
            for o in self._organizations(actor.user_id)
            for team_id in o.teams
            if (role := self._team_role(actor, o, team_id)) is not None
        ]

    def team_info(self, who: UUID | Actor, team_id: UUID) -> TeamInfo:
        """The team with the actor's role and its member count; NotFound if it has none."""
        organization, role = self.team_of(who, team_id)
        return _team_info(organization, team_id, role)

    def team_of(self, who: UUID | Actor, team_id: UUID) -> tuple[Organization, Role]:
        """The team's organization and the actor's role in it; NotFound if it has none."""
        actor = actor_of(who)
        for organization in self._organizations(actor.user_id):
            role = self._team_role(actor, organization, team_id)
            if role is not None:
                return organization, role
        raise TeamNotFound(team_id)

    def profile(self, who: UUID | Actor) -> Profile:
        """The user with its organizations (and role in each), teams and workspaces."""
        actor = actor_of(who)
        user = self._get(User, actor.user_id)
        if user is None:
            raise UserNotFound()
        return Profile(
            user.id,
            user.email,
            user.name,
            [OrganizationInfo(o.id, o.name, role) for o, role in self._memberships(actor)],
            self.teams_of(actor),
            self.workspaces_of(actor),
            user.avatar_url,
            user.preferences,
        )

    # -- teams and workspaces -------------------------------------------------------

    def create_team(
        self, who: UUID | Actor, name: str, organization_id: UUID | None = None
    ) -> TeamInfo:
        """A team in the organization (default: the actor's personal one); its creator
        is its first owner."""
        actor = actor_of(who)
        organization, _ = self._managed(actor, organization_id, "manage_workspaces")
        team_id = uuid4()
        organization.create_team(team_id, name)
        organization.add_team_member(team_id, actor.user_id, "owner")
        notification_id = self._save(organization)
        return TeamInfo(
            team_id, organization.teams[team_id], organization.id, notification_id, "owner",
            len(organization.team_roles(team_id)), organization.modified_on,
        )  # fmt: skip

    def create_workspace(
        self,
        who: UUID | Actor,
        name: str,
        organization_id: UUID | None = None,
        team_id: UUID | None = None,
    ) -> WorkspaceInfo:
        """A workspace in a team the actor manages (default: its personal organization's
        first team)."""
        actor = actor_of(who)
        if team_id is not None and organization_id is None:
            organization, role = self.team_of(actor, team_id)
            require(role, "manage_workspaces", "creating a workspace in this team")
        else:
            organization, _ = self._managed(actor, organization_id, "manage_workspaces")
            team_id = team_id or organization.default_team_id
            if team_id is None or team_id not in organization.teams:
                raise TeamNotFound(team_id or "default")
        workspace_id = uuid4()
        organization.create_workspace(workspace_id, team_id, name)
        self._save(organization)
        return self.workspace_of(actor, workspace_id)

    def change_workspace(
        self,
        who: UUID | Actor,
        workspace_id: UUID,
        *,
        name: str | None = None,
        settings: SessionSettings | None = None,
    ) -> WorkspaceInfo:
        """Rename the workspace, or change the defaults of its new sessions."""
        actor = actor_of(who)
        self.authorize(actor, workspace_id, action="manage_workspaces")
        organization = self._organization_with(actor.user_id, workspace_id)
        if name is not None:
            organization.rename_workspace(workspace_id, name)
        if settings is not None:
            organization.change_workspace_settings(workspace_id, settings.to_json())
        self._save(organization)
        return self.workspace_of(actor, workspace_id)

    # -- organization members (an operator's or an owner's doing) --------------------

    def add_member(
        self, who: UUID | Actor, organization_id: UUID, email: str, role: str
    ) -> Membership:
        """Add a registered user to the whole organization (by an owner or admin)."""
        checked = check_role(role)
        organization, actor_role = self._membership(actor_of(who), organization_id)
        check_may_grant(actor_role, checked)
        user = self._get(User, User.id_for(normalize_email(email)))
        if user is None:
            raise UserNotFound()
        organization.add_member(user.id, checked)
        if organization.id not in user.organization_ids:
            user.join_organization(organization.id, checked)
        notification_id = self._save(organization, user)
        return Membership(organization.id, user.id, checked, notification_id)

    def change_member_role(
        self, who: UUID | Actor, organization_id: UUID, user_id: UUID, role: str
    ) -> Membership:
        checked = check_role(role)
        organization, actor_role = self._membership(actor_of(who), organization_id)
        current = organization.role_of(user_id)
        if current is None:
            raise UserNotFound()
        check_may_grant(actor_role, checked)
        # Taking the owner role away is an owner's decision too.
        check_may_grant(actor_role, current)
        organization.change_member_role(user_id, checked)
        return Membership(organization.id, user_id, checked, self._save(organization))

    # -- reading the aggregates -------------------------------------------------------

    def organization_ids_of(self, user_id: UUID) -> tuple[UUID, ...]:
        """The organizations the user belongs to, in joining order (cached reads)."""
        return tuple(o.id for o in self._organizations(user_id, copy=False))

    def _organizations(self, user_id: UUID, *, copy: bool = True) -> Iterator[Organization]:
        """The organizations the user belongs to (as a member of it or of one of its
        teams), in joining order; the cached ones themselves if not `copy` (only to read)."""
        user = self._get(User, user_id, copy=copy)
        for organization_id in user.organization_ids if user else []:
            organization = self._get(Organization, organization_id, copy=copy)
            if organization is not None and organization.belongs(user_id):
                yield organization

    def _memberships(self, who: UUID | Actor) -> Iterator[tuple[Organization, Role]]:
        """The organizations the actor is an organization member of, with its role."""
        actor = actor_of(who)
        for organization in self._organizations(actor.user_id):
            role = organization.role_of(actor.user_id)
            if role is not None and self._key_reaches(actor, organization):
                yield organization, capped(role, actor.role_cap)

    def _workspace_info(
        self, actor: Actor, organization: Organization, workspace_id: UUID
    ) -> WorkspaceInfo | None:
        if actor.workspace_id is not None and actor.workspace_id != workspace_id:
            return None
        role = organization.role_in_workspace(actor.user_id, workspace_id)
        if role is None:
            return None
        team_id, name = organization.workspaces[workspace_id]
        settings = SessionSettings.of(organization.workspace_settings.get(workspace_id))
        return WorkspaceInfo(
            workspace_id, name, organization.id, team_id, capped(role, actor.role_cap),
            organization.workspace_created_at[workspace_id], settings,
        )  # fmt: skip

    def _team_role(self, actor: Actor, organization: Organization, team_id: UUID) -> Role | None:
        if actor.workspace_id is not None:
            found = organization.workspaces.get(actor.workspace_id)
            if found is None or found[0] != team_id:
                return None
        role = organization.role_in_team(actor.user_id, team_id)
        return None if role is None else capped(role, actor.role_cap)

    @staticmethod
    def _key_reaches(actor: Actor, organization: Organization) -> bool:
        """A key restricted to a workspace reaches that workspace's organization alone."""
        return actor.workspace_id is None or actor.workspace_id in organization.workspaces

    def _organization_with(self, user_id: UUID, workspace_id: UUID) -> Organization:
        for organization in self._organizations(user_id):
            if workspace_id in organization.workspaces:
                return organization
        raise WorkspaceNotFound(workspace_id)

    def _membership(self, actor: Actor, organization_id: UUID | None) -> tuple[Organization, Role]:
        """The organization (default: personal) and the actor's organization role;
        NotFound if it is not an organization member."""
        user = self._get(User, actor.user_id)
        wanted = organization_id or (user.personal_organization_id if user else None)
        for organization, role in self._memberships(actor):
            if organization.id == wanted:
                return organization, role
        raise OrganizationNotFound(wanted or "personal")

    def _managed(
        self, actor: Actor, organization_id: UUID | None, action: Action
    ) -> tuple[Organization, Role]:
        """The organization and the actor's role, if that role may take `action` there."""
        organization, role = self._membership(actor, organization_id)
        return organization, require(role, action)


def _team_info(organization: Organization, team_id: UUID, role: Role) -> TeamInfo:
    name, members = organization.teams[team_id], len(organization.team_roles(team_id))
    return TeamInfo(team_id, name, organization.id, 0, role, members)


def check_may_grant(actor_role: Role, role: Role) -> None:
    """Managers grant roles; only an owner grants (or takes away) the owner role."""
    require(actor_role, "manage_members")
    if role == "owner":
        require(actor_role, "grant_owner")
