"""Users, the organizations they belong to, and the token family of each login.

Organizations contain teams, teams contain workspaces, workspaces contain sessions.
Roles are held per organization, by the `Organization` aggregate; a `User` only
lists the organizations it joined, so authorization walks a user's few
organizations instead of scanning all of them.
"""

from __future__ import annotations

from datetime import datetime
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from domain.account_errors import AlreadyMember, TokenReused, TokenRevoked
from domain.account_values import UNSET, Unset, check_avatar_url, check_preferences
from domain.account_values import check_name as check_name
from domain.account_values import normalize_email as normalize_email
from domain.api_keys import API_KEY_EVENT_CLASSES, ApiKeyEvent
from domain.budgets import BUDGET_EVENT_CLASSES, BudgetEvent
from domain.errors import InvalidCommand
from domain.invitations import INVITATION_EVENT_CLASSES, InvitationEvent
from domain.mcp_servers import MCP_SERVERS_EVENT_CLASSES, McpServersEvent
from domain.memories import MEMORY_EVENT_CLASSES, MemoryEvent
from domain.roles import Role, check_role, higher
from domain.workspace_files import WORKSPACE_FOLDER_EVENT_CLASSES, WorkspaceFolderEvent

REUSE_REASON = "refresh token reused"

# Fixed forever: user ids are derived from it, so changing it would orphan every user.
USER_NAMESPACE = UUID("5b0c8a6e-4f4e-4d0e-9a57-7d1f3c2b8e41")


class User(Aggregate):
    """A person who logs in; its id is derived from its email, so emails are unique."""

    class UserRegistered(Aggregate.Created):
        email: str
        name: str
        password_hash: str

    class OrganizationJoined(Aggregate.Event):
        organization_id: UUID
        # The role granted on joining; the organization holds the current one.
        role: str

    class ProfileChanged(Aggregate.Event):
        name: str
        avatar_url: str | None
        preferences: dict[str, object]

    class PasswordChanged(Aggregate.Event):
        password_hash: str

    class ApiKeyCreated(Aggregate.Event):
        api_key_id: UUID

    class UserErased(Aggregate.Event):
        """The user's personal data was erased (its key destroyed): by itself, an
        administrator of one of its organizations, or the operator (None)."""

        erased_by: UUID | None

    @staticmethod
    def id_for(email: str) -> UUID:
        return uuid5(USER_NAMESPACE, email.strip().lower())

    @staticmethod
    def create_id(email: str) -> UUID:
        # A second registration of an email gets the same id, and so collides with
        # the first one on version 1 in the event store: uniqueness without a lookup.
        return User.id_for(email)

    @event(UserRegistered)
    def __init__(self, email: str, name: str, password_hash: str) -> None:
        self.email = email
        self.name = name
        self.password_hash = password_hash
        # In joining order; the first is the personal organization made at registration.
        self.organization_ids: list[UUID] = []
        self.avatar_url: str | None = None
        self.preferences: dict[str, object] = {}
        # Bumped by each password change: a login started before it cannot refresh.
        self.credentials_epoch = 0
        self.api_key_ids: list[UUID] = []

    @classmethod
    def register(cls, email: str, name: str, password_hash: str) -> User:
        """A new user; the password is checked and hashed by the caller (no I/O here)."""
        if not password_hash.startswith("$"):
            raise InvalidCommand("expected a password hash in PHC format, not a password")
        return cls(normalize_email(email), check_name(name), password_hash)

    @property
    def personal_organization_id(self) -> UUID | None:
        return self.organization_ids[0] if self.organization_ids else None

    def join_organization(self, organization_id: UUID, role: str) -> None:
        if organization_id in self.organization_ids:
            raise AlreadyMember(self.id, organization_id)
        self._organization_joined(organization_id, check_role(role))

    @event(OrganizationJoined)
    def _organization_joined(self, organization_id: UUID, role: str) -> None:
        self.organization_ids.append(organization_id)

    def change_profile(
        self,
        name: str | None = None,
        avatar_url: str | Unset | None = UNSET,
        preferences: dict[str, object] | None = None,
    ) -> None:
        """Change what is given (`avatar_url=None` clears it); nothing if nothing changes."""
        new = (
            self.name if name is None else check_name(name),
            self.avatar_url if isinstance(avatar_url, Unset) else check_avatar_url(avatar_url),
            self.preferences if preferences is None else check_preferences(preferences),
        )
        if new != (self.name, self.avatar_url, self.preferences):
            self._profile_changed(*new)

    @event(ProfileChanged)
    def _profile_changed(
        self, name: str, avatar_url: str | None, preferences: dict[str, object]
    ) -> None:
        self.name, self.avatar_url, self.preferences = name, avatar_url, preferences

    def change_password(self, password_hash: str) -> None:
        if not password_hash.startswith("$"):
            raise InvalidCommand("expected a password hash in PHC format, not a password")
        self._password_changed(password_hash)

    @event(PasswordChanged)
    def _password_changed(self, password_hash: str) -> None:
        self.password_hash = password_hash
        self.credentials_epoch += 1

    def add_api_key(self, api_key_id: UUID) -> None:
        self._api_key_created(api_key_id)

    @event(ApiKeyCreated)
    def _api_key_created(self, api_key_id: UUID) -> None:
        self.api_key_ids.append(api_key_id)

    erased = False  # a class default: users folded before erasure existed were not

    def erase(self, by: UUID | None) -> None:
        """Record the erasure (once: again is nothing)."""
        if not self.erased:
            self._erased(by)

    @event(UserErased)
    def _erased(self, erased_by: UUID | None) -> None:
        self.erased = True
        self.credentials_epoch += 1  # every login ends


class Organization(Aggregate):
    """A tenant: its members and their roles, its teams and their workspaces."""

    class OrganizationCreated(Aggregate.Created):
        name: str
        owner_id: UUID

    class MemberAdded(Aggregate.Event):
        user_id: UUID
        role: Role

    class MemberRoleChanged(Aggregate.Event):
        user_id: UUID
        role: Role

    class TeamCreated(Aggregate.Event):
        team_id: UUID
        name: str

    class WorkspaceCreated(Aggregate.Event):
        workspace_id: UUID
        team_id: UUID
        name: str

        def apply(self, aggregate: Aggregate) -> None:
            assert isinstance(aggregate, Organization)
            aggregate.workspaces[self.workspace_id] = (self.team_id, self.name)
            aggregate.workspace_created_at[self.workspace_id] = self.timestamp

    class TeamMemberAdded(Aggregate.Event):
        team_id: UUID
        user_id: UUID
        role: Role

    class TeamMemberRoleChanged(Aggregate.Event):
        team_id: UUID
        user_id: UUID
        role: Role

    class TeamMemberRemoved(Aggregate.Event):
        team_id: UUID
        user_id: UUID

    class TeamDeleted(Aggregate.Event):
        team_id: UUID

    class WorkspaceRenamed(Aggregate.Event):
        workspace_id: UUID
        name: str

    class WorkspaceSettingsChanged(Aggregate.Event):
        workspace_id: UUID
        settings: dict[str, object]  # a session's settings, as `SessionSettings.to_json`

    @event(OrganizationCreated)
    def __init__(self, name: str, owner_id: UUID) -> None:
        self.name = name
        self.owner_id = owner_id
        # Roles over the whole organization (every team in it).
        self.members: dict[UUID, Role] = {owner_id: "owner"}
        self.teams: dict[UUID, str] = {}
        # Roles in one team (its workspaces), by team, in joining order.
        self.team_members: dict[UUID, dict[UUID, Role]] = {}
        self.workspaces: dict[UUID, tuple[UUID, str]] = {}
        self.workspace_settings: dict[UUID, dict[str, object]] = {}
        self.workspace_created_at: dict[UUID, datetime] = {}

    @classmethod
    def create(cls, name: str, owner_id: UUID) -> Organization:
        return cls(check_name(name, "organization name"), owner_id)

    @property
    def default_team_id(self) -> UUID | None:
        """The first team created (dicts keep insertion order)."""
        return next(iter(self.teams), None)

    def role_of(self, user_id: UUID) -> Role | None:
        """The user's role over the whole organization (None: not across it)."""
        return self.members.get(user_id)

    def role_in_team(self, user_id: UUID, team_id: UUID) -> Role | None:
        """The higher of the user's organization role and its role in the team."""
        if team_id not in self.teams:
            return None
        return higher(self.members.get(user_id), self.team_members.get(team_id, {}).get(user_id))

    def role_in_workspace(self, user_id: UUID, workspace_id: UUID) -> Role | None:
        found = self.workspaces.get(workspace_id)
        return None if found is None else self.role_in_team(user_id, found[0])

    def belongs(self, user_id: UUID) -> bool:
        """A member of the organization or of any of its teams."""
        return user_id in self.members or any(user_id in m for m in self.team_members.values())

    def team_roles(self, team_id: UUID) -> dict[UUID, Role]:
        """Everyone with a role in the team (the organization's members included)."""
        roles = {u: r for u, r in self.members.items()}
        for user_id, role in self.team_members.get(team_id, {}).items():
            roles[user_id] = higher(roles.get(user_id), role) or role
        return roles

    # -- members --------------------------------------------------------------

    def add_member(self, user_id: UUID, role: str) -> None:
        if user_id in self.members:
            raise AlreadyMember(user_id, self.id)
        self._member_added(user_id, check_role(role))

    @event(MemberAdded)
    def _member_added(self, user_id: UUID, role: Role) -> None:
        self.members[user_id] = role

    def change_member_role(self, user_id: UUID, role: str) -> None:
        checked = check_role(role)
        current = self.members.get(user_id)
        if current is None:
            raise InvalidCommand(f"user {user_id} is not a member")
        owners = [u for u, r in self.members.items() if r == "owner"]
        if current == "owner" and checked != "owner" and len(owners) == 1:
            raise InvalidCommand("an organization keeps at least one owner")
        if current != checked:
            self._member_role_changed(user_id, checked)

    @event(MemberRoleChanged)
    def _member_role_changed(self, user_id: UUID, role: Role) -> None:
        self.members[user_id] = role

    # -- teams and workspaces ---------------------------------------------------

    def create_team(self, team_id: UUID, name: str) -> None:
        if team_id in self.teams:
            raise InvalidCommand(f"team {team_id} already exists")
        self._team_created(team_id, check_name(name, "team name"))

    @event(TeamCreated)
    def _team_created(self, team_id: UUID, name: str) -> None:
        self.teams[team_id] = name

    def create_workspace(self, workspace_id: UUID, team_id: UUID, name: str) -> None:
        if team_id not in self.teams:
            raise InvalidCommand(f"team {team_id} is not in organization {self.id}")
        if workspace_id in self.workspaces:
            raise InvalidCommand(f"workspace {workspace_id} already exists")
        checked = check_name(name, "workspace name")
        self.trigger_event(
            self.WorkspaceCreated, workspace_id=workspace_id, team_id=team_id, name=checked
        )

    def rename_workspace(self, workspace_id: UUID, name: str) -> None:
        _, current = self._workspace(workspace_id)
        checked = check_name(name, "workspace name")
        if checked != current:
            self._workspace_renamed(workspace_id, checked)

    @event(WorkspaceRenamed)
    def _workspace_renamed(self, workspace_id: UUID, name: str) -> None:
        self.workspaces[workspace_id] = (self.workspaces[workspace_id][0], name)

    def change_workspace_settings(self, workspace_id: UUID, settings: dict[str, object]) -> None:
        """New defaults for the workspace's sessions (checked by the caller's value type)."""
        self._workspace(workspace_id)
        if settings != self.workspace_settings.get(workspace_id, {}):
            self._workspace_settings_changed(workspace_id, settings)

    @event(WorkspaceSettingsChanged)
    def _workspace_settings_changed(self, workspace_id: UUID, settings: dict[str, object]) -> None:
        self.workspace_settings[workspace_id] = settings

    def _workspace(self, workspace_id: UUID) -> tuple[UUID, str]:
        found = self.workspaces.get(workspace_id)
        if found is None:
            raise InvalidCommand(f"workspace {workspace_id} is not in organization {self.id}")
        return found

    # -- team members -----------------------------------------------------------

    def add_team_member(self, team_id: UUID, user_id: UUID, role: str) -> None:
        self._team(team_id)
        if user_id in self.team_members.get(team_id, {}):
            raise AlreadyMember(user_id, team_id)
        self._team_member_added(team_id, user_id, check_role(role))

    @event(TeamMemberAdded)
    def _team_member_added(self, team_id: UUID, user_id: UUID, role: Role) -> None:
        self.team_members.setdefault(team_id, {})[user_id] = role

    def change_team_member_role(self, team_id: UUID, user_id: UUID, role: str) -> None:
        checked = check_role(role)
        current = self._team_member(team_id, user_id)
        if current == "owner" and checked != "owner":
            self._keep_an_owner(team_id, user_id)
        if current != checked:
            self._team_member_role_changed(team_id, user_id, checked)

    @event(TeamMemberRoleChanged)
    def _team_member_role_changed(self, team_id: UUID, user_id: UUID, role: Role) -> None:
        self.team_members[team_id][user_id] = role

    def remove_team_member(self, team_id: UUID, user_id: UUID) -> None:
        if self._team_member(team_id, user_id) == "owner":
            self._keep_an_owner(team_id, user_id)
        self._team_member_removed(team_id, user_id)

    @event(TeamMemberRemoved)
    def _team_member_removed(self, team_id: UUID, user_id: UUID) -> None:
        del self.team_members[team_id][user_id]

    def delete_team(self, team_id: UUID) -> None:
        """The team, its members' roles in it and its workspaces go (their sessions stay
        in the log, out of everyone's reach); an organization keeps one team."""
        self._team(team_id)
        if len(self.teams) == 1:
            raise InvalidCommand("an organization keeps at least one team")
        self._team_deleted(team_id)

    @event(TeamDeleted)
    def _team_deleted(self, team_id: UUID) -> None:
        del self.teams[team_id]
        self.team_members.pop(team_id, None)
        for workspace_id in [w for w, (t, _) in self.workspaces.items() if t == team_id]:
            del self.workspaces[workspace_id]
            self.workspace_settings.pop(workspace_id, None)
            self.workspace_created_at.pop(workspace_id, None)

    def _team(self, team_id: UUID) -> str:
        name = self.teams.get(team_id)
        if name is None:
            raise InvalidCommand(f"team {team_id} is not in organization {self.id}")
        return name

    def _team_member(self, team_id: UUID, user_id: UUID) -> Role:
        self._team(team_id)
        role = self.team_members.get(team_id, {}).get(user_id)
        if role is None:
            if user_id in self.members:
                raise InvalidCommand(
                    f"user {user_id} has their role from the organization "
                    f"({self.members[user_id]}), not from this team"
                )
            raise InvalidCommand(f"user {user_id} is not a member of team {team_id}")
        return role

    def _keep_an_owner(self, team_id: UUID, leaving: UUID) -> None:
        """Refuse a change that would leave the team without an owner."""
        others = [u for u, r in self.team_roles(team_id).items() if r == "owner" and u != leaving]
        if not others:
            raise InvalidCommand("a team keeps at least one owner: make another member owner first")


class TokenFamily(Aggregate):
    """The refresh tokens (and access tokens) of one login, revoked together."""

    class TokenFamilyStarted(Aggregate.Created):
        user_id: UUID
        refresh_jti: str
        # The user's credentials epoch at login: a password change since ends the login.
        epoch: int

        class_version = 2

        @staticmethod
        def upcast_v1_v2(state: dict[str, object]) -> None:
            state.setdefault("epoch", 0)

    class RefreshTokenRotated(Aggregate.Event):
        previous_jti: str
        next_jti: str

    class TokenFamilyRevoked(Aggregate.Event):
        reason: str

    @event(TokenFamilyStarted)
    def __init__(self, user_id: UUID, refresh_jti: str, epoch: int) -> None:
        self.user_id = user_id
        self.epoch = epoch
        # Only the newest refresh token may be spent; any other is a replay.
        self.refresh_jti = refresh_jti
        self.revoked = False
        self.revoked_reason: str | None = None

    @classmethod
    def start(cls, user_id: UUID, refresh_jti: str, epoch: int = 0) -> TokenFamily:
        if not refresh_jti:
            raise InvalidCommand("a token family starts with a refresh token id")
        return cls(user_id, refresh_jti, epoch)

    def rotate(self, presented_jti: str, next_jti: str) -> None:
        """Spend the current refresh token for the next one.

        Presenting any other token of this family means a token was stolen and
        replayed (by the thief or by its owner): the family is revoked, and that
        revocation is pending on the aggregate when `TokenReused` is raised, so the
        caller saves it before answering.
        """
        if self.revoked:
            raise TokenRevoked()
        if presented_jti != self.refresh_jti:
            self._revoked(REUSE_REASON)
            raise TokenReused()
        if not next_jti or next_jti == presented_jti:
            raise InvalidCommand("the next refresh token needs a new id")
        self._refresh_token_rotated(presented_jti, next_jti)

    @event(RefreshTokenRotated)
    def _refresh_token_rotated(self, previous_jti: str, next_jti: str) -> None:
        self.refresh_jti = next_jti

    def revoke(self, reason: str) -> None:
        """Revoke the family; revoking it again records nothing (logout is idempotent)."""
        if not self.revoked:
            self._revoked(reason)

    @event(TokenFamilyRevoked)
    def _revoked(self, reason: str) -> None:
        self.revoked = True
        self.revoked_reason = reason


# Every event of each aggregate: a `match` over one ending in `assert_never` is
# checked for completeness by mypy.
UserEvent = (
    User.UserRegistered
    | User.OrganizationJoined
    | User.ProfileChanged
    | User.PasswordChanged
    | User.ApiKeyCreated
    | User.UserErased
)
OrganizationEvent = (
    Organization.OrganizationCreated
    | Organization.MemberAdded
    | Organization.MemberRoleChanged
    | Organization.TeamCreated
    | Organization.WorkspaceCreated
    | Organization.TeamMemberAdded
    | Organization.TeamMemberRoleChanged
    | Organization.TeamMemberRemoved
    | Organization.TeamDeleted
    | Organization.WorkspaceRenamed
    | Organization.WorkspaceSettingsChanged
)
TokenFamilyEvent = (
    TokenFamily.TokenFamilyStarted
    | TokenFamily.RefreshTokenRotated
    | TokenFamily.TokenFamilyRevoked
)
AccountEvent = (
    UserEvent
    | OrganizationEvent
    | TokenFamilyEvent
    | ApiKeyEvent
    | InvitationEvent
    | BudgetEvent
    | WorkspaceFolderEvent
    | MemoryEvent
    | McpServersEvent
)
ACCOUNT_EVENT_CLASSES: tuple[type[AccountEvent], ...] = (
    *UserEvent.__args__,
    *OrganizationEvent.__args__,
    *TokenFamilyEvent.__args__,
    *API_KEY_EVENT_CLASSES,
    *INVITATION_EVENT_CLASSES,
    *BUDGET_EVENT_CLASSES,
    *WORKSPACE_FOLDER_EVENT_CLASSES,
    *MEMORY_EVENT_CLASSES,
    *MCP_SERVERS_EVENT_CLASSES,
)
