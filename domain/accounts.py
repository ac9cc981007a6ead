"""Users, the organizations they belong to, and the token family of each login.

Organizations contain teams, teams contain workspaces, workspaces contain sessions.
Roles are held per organization, by the `Organization` aggregate; a `User` only
lists the organizations it joined, so authorization walks a user's few
organizations instead of scanning all of them.
"""

from __future__ import annotations

from typing import Literal
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from domain.account_errors import AlreadyMember, TokenReused, TokenRevoked
from domain.budgets import BUDGET_EVENT_CLASSES, BudgetEvent
from domain.errors import InvalidCommand
from domain.memories import MEMORY_EVENT_CLASSES, MemoryEvent
from domain.workspace_files import WORKSPACE_FOLDER_EVENT_CLASSES, WorkspaceFolderEvent

Role = Literal["owner", "admin", "member", "viewer"]
ROLES: tuple[Role, ...] = ("owner", "admin", "member", "viewer")
# Who may create workspaces and add members, and who may change what is in a workspace.
MANAGING_ROLES: frozenset[str] = frozenset({"owner", "admin"})
WRITING_ROLES: frozenset[str] = frozenset({"owner", "admin", "member"})

MAX_EMAIL_CHARS = 254  # RFC 5321's limit on a forward path
MAX_NAME_CHARS = 200
REUSE_REASON = "refresh token reused"

# Fixed forever: user ids are derived from it, so changing it would orphan every user.
USER_NAMESPACE = UUID("5b0c8a6e-4f4e-4d0e-9a57-7d1f3c2b8e41")


def normalize_email(email: str) -> str:
    """The email as it identifies a user: trimmed, lower case, simply well formed."""
    email = email.strip().lower()
    local, at, domain = email.partition("@")
    well_formed = (
        bool(at)
        and 0 < len(email) <= MAX_EMAIL_CHARS
        and bool(local)
        and "@" not in domain
        and "." in domain[1:-1]
        and not domain.startswith(".")
        and not domain.endswith(".")
        and not any(c.isspace() for c in email)
    )
    if not well_formed:
        raise InvalidCommand("email must look like name@example.com (at most 254 characters)")
    return email


def check_name(name: str, what: str = "name") -> str:
    name = name.strip()
    if not name or len(name) > MAX_NAME_CHARS:
        raise InvalidCommand(f"{what} must be 1 to {MAX_NAME_CHARS} characters")
    return name


def check_role(role: str) -> Role:
    if role not in ROLES:
        raise InvalidCommand(f"role must be one of {', '.join(ROLES)}")
    return role


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

    @event(OrganizationCreated)
    def __init__(self, name: str, owner_id: UUID) -> None:
        self.name = name
        self.owner_id = owner_id
        self.members: dict[UUID, Role] = {owner_id: "owner"}
        self.teams: dict[UUID, str] = {}
        self.workspaces: dict[UUID, tuple[UUID, str]] = {}

    @classmethod
    def create(cls, name: str, owner_id: UUID) -> Organization:
        return cls(check_name(name, "organization name"), owner_id)

    @property
    def default_team_id(self) -> UUID | None:
        """The first team created (dicts keep insertion order)."""
        return next(iter(self.teams), None)

    def role_of(self, user_id: UUID) -> Role | None:
        return self.members.get(user_id)

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
        self._workspace_created(workspace_id, team_id, check_name(name, "workspace name"))

    @event(WorkspaceCreated)
    def _workspace_created(self, workspace_id: UUID, team_id: UUID, name: str) -> None:
        self.workspaces[workspace_id] = (team_id, name)


class TokenFamily(Aggregate):
    """The refresh tokens (and access tokens) of one login, revoked together."""

    class TokenFamilyStarted(Aggregate.Created):
        user_id: UUID
        refresh_jti: str

    class RefreshTokenRotated(Aggregate.Event):
        previous_jti: str
        next_jti: str

    class TokenFamilyRevoked(Aggregate.Event):
        reason: str

    @event(TokenFamilyStarted)
    def __init__(self, user_id: UUID, refresh_jti: str) -> None:
        self.user_id = user_id
        # Only the newest refresh token may be spent; any other is a replay.
        self.refresh_jti = refresh_jti
        self.revoked = False
        self.revoked_reason: str | None = None

    @classmethod
    def start(cls, user_id: UUID, refresh_jti: str) -> TokenFamily:
        if not refresh_jti:
            raise InvalidCommand("a token family starts with a refresh token id")
        return cls(user_id, refresh_jti)

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
UserEvent = User.UserRegistered | User.OrganizationJoined
OrganizationEvent = (
    Organization.OrganizationCreated
    | Organization.MemberAdded
    | Organization.MemberRoleChanged
    | Organization.TeamCreated
    | Organization.WorkspaceCreated
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
    | BudgetEvent
    | WorkspaceFolderEvent
    | MemoryEvent
)
ACCOUNT_EVENT_CLASSES: tuple[type[AccountEvent], ...] = (
    *UserEvent.__args__,
    *OrganizationEvent.__args__,
    *TokenFamilyEvent.__args__,
    *BUDGET_EVENT_CLASSES,
    *WORKSPACE_FOLDER_EVENT_CLASSES,
    *MEMORY_EVENT_CLASSES,
)
