"""Use cases on tenants: organizations' members, teams and workspaces, and who may do what."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from uuid import UUID, uuid4

from application.account_store import AccountStore
from domain.account_errors import (
    Forbidden,
    OrganizationNotFound,
    TeamNotFound,
    UserNotFound,
    WorkspaceNotFound,
)
from domain.accounts import (
    MANAGING_ROLES,
    WRITING_ROLES,
    Organization,
    Role,
    User,
    check_role,
    normalize_email,
)


@dataclass(frozen=True)
class WorkspaceInfo:
    workspace_id: UUID
    name: str
    organization_id: UUID
    team_id: UUID
    role: Role


@dataclass(frozen=True)
class TeamInfo:
    team_id: UUID
    name: str
    organization_id: UUID
    notification_id: int


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


@dataclass(frozen=True)
class Membership:
    organization_id: UUID
    user_id: UUID
    role: Role
    notification_id: int


class Tenants(AccountStore):
    """Organizations with their members, teams and workspaces; authorization."""

    def workspaces_of(self, user_id: UUID) -> list[WorkspaceInfo]:
        """The user's workspaces: organizations in joining order, workspaces in creation order."""
        return [
            WorkspaceInfo(workspace_id, name, organization.id, team_id, role)
            for organization, role in self._memberships(user_id)
            for workspace_id, (team_id, name) in organization.workspaces.items()
        ]

    def create_workspace(
        self,
        user_id: UUID,
        name: str,
        organization_id: UUID | None = None,
        team_id: UUID | None = None,
    ) -> WorkspaceInfo:
        """A workspace in the organization's team (default: the user's personal one)."""
        organization, role = self._managed(user_id, organization_id, "create workspaces")
        team_id = team_id or organization.default_team_id
        if team_id is None or team_id not in organization.teams:
            raise TeamNotFound(team_id or "default")
        workspace_id = uuid4()
        organization.create_workspace(workspace_id, team_id, name)
        self._save(organization)
        _, workspace_name = organization.workspaces[workspace_id]
        return WorkspaceInfo(workspace_id, workspace_name, organization.id, team_id, role)

    def create_team(
        self, user_id: UUID, name: str, organization_id: UUID | None = None
    ) -> TeamInfo:
        """A team in the organization (default: the user's personal one)."""
        organization, _ = self._managed(user_id, organization_id, "create teams")
        team_id = uuid4()
        organization.create_team(team_id, name)
        notification_id = self._save(organization)
        return TeamInfo(team_id, organization.teams[team_id], organization.id, notification_id)

    def profile(self, user_id: UUID) -> Profile:
        """The user with its organizations (and role in each), teams and workspaces."""
        user = self._get(User, user_id)
        if user is None:
            raise UserNotFound()
        memberships = list(self._memberships(user_id))
        return Profile(
            user_id,
            user.email,
            user.name,
            [OrganizationInfo(o.id, o.name, role) for o, role in memberships],
            [TeamInfo(t, name, o.id, 0) for o, _ in memberships for t, name in o.teams.items()],
            self.workspaces_of(user_id),
        )

    def organization_roles(self, user_id: UUID) -> dict[UUID, Role]:
        """The user's role in each of its organizations."""
        return {o.id: role for o, role in self._memberships(user_id)}

    def workspace_of(self, user_id: UUID, workspace_id: UUID) -> WorkspaceInfo:
        """The workspace with its organization, team and the user's role; NotFound if the
        user is not a member of its organization."""
        for organization, role in self._memberships(user_id, copy=False):
            if workspace_id in organization.workspaces:
                team_id, name = organization.workspaces[workspace_id]
                return WorkspaceInfo(workspace_id, name, organization.id, team_id, role)
        raise WorkspaceNotFound(workspace_id)

    def role_in_workspace(self, user_id: UUID, workspace_id: UUID) -> Role | None:
        for organization, role in self._memberships(user_id, copy=False):
            if workspace_id in organization.workspaces:
                return role
        return None

    def authorize(self, user_id: UUID, workspace_id: UUID, *, write: bool) -> Role:
        """The user's role in the workspace; a workspace it cannot see does not exist."""
        role = self.role_in_workspace(user_id, workspace_id)
        if role is None:
            raise WorkspaceNotFound(workspace_id)
        if write and role not in WRITING_ROLES:
            raise Forbidden(f"a {role} cannot change workspace {workspace_id}")
        return role

    def add_member(
        self, actor_id: UUID, organization_id: UUID, email: str, role: str
    ) -> Membership:
        """Add a registered user to the organization (by an owner or admin)."""
        checked = check_role(role)
        organization, actor_role = self._membership(actor_id, organization_id)
        self._check_may_grant(actor_role, checked)
        user = self._get(User, User.id_for(normalize_email(email)))
        if user is None:
            raise UserNotFound()
        organization.add_member(user.id, checked)
        user.join_organization(organization.id, checked)
        notification_id = self._save(organization, user)
        return Membership(organization.id, user.id, checked, notification_id)

    def change_member_role(
        self, actor_id: UUID, organization_id: UUID, user_id: UUID, role: str
    ) -> Membership:
        checked = check_role(role)
        organization, actor_role = self._membership(actor_id, organization_id)
        current = organization.role_of(user_id)
        if current is None:
            raise UserNotFound()
        self._check_may_grant(actor_role, checked)
        # Taking the owner role away is an owner's decision too.
        self._check_may_grant(actor_role, current)
        organization.change_member_role(user_id, checked)
        return Membership(organization.id, user_id, checked, self._save(organization))

    # -- memberships --------------------------------------------------------------

    def _memberships(
        self, user_id: UUID, *, copy: bool = True
    ) -> Iterator[tuple[Organization, Role]]:
        """The user's organizations with its role in each, read from the aggregates
        (the cached ones themselves if not `copy`: only to read)."""
        user = self._get(User, user_id, copy=copy)
        for organization_id in user.organization_ids if user else []:
            organization = self._get(Organization, organization_id, copy=copy)
            role = organization.role_of(user_id) if organization else None
            if organization is not None and role is not None:
                yield organization, role

    def _membership(self, user_id: UUID, organization_id: UUID | None) -> tuple[Organization, Role]:
        """The organization (default: personal) and the user's role; NotFound if not a member."""
        user = self._get(User, user_id)
        wanted = organization_id or (user.personal_organization_id if user else None)
        for organization, role in self._memberships(user_id):
            if organization.id == wanted:
                return organization, role
        raise OrganizationNotFound(wanted or "personal")

    def _managed(
        self, user_id: UUID, organization_id: UUID | None, what: str
    ) -> tuple[Organization, Role]:
        """The organization and the user's role, if that role manages it."""
        organization, role = self._membership(user_id, organization_id)
        if role not in MANAGING_ROLES:
            raise Forbidden(f"a {role} cannot {what}")
        return organization, role

    @staticmethod
    def _check_may_grant(actor_role: Role, role: Role) -> None:
        if actor_role not in MANAGING_ROLES:
            raise Forbidden(f"a {actor_role} cannot manage members")
        if role == "owner" and actor_role != "owner":
            raise Forbidden("only an owner can grant or take away the owner role")
