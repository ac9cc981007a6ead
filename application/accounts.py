"""Use cases on accounts, tenants and logins: register, log in, refresh, authorize.

Its events go to their own table (`accounts_events`: the library's Postgres factory
names tables after the application), apart from the agent sessions' log.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar
from uuid import UUID, uuid4

from argon2 import PasswordHasher
from eventsourcing.application import AggregateNotFoundError, Application
from eventsourcing.domain import Aggregate
from eventsourcing.persistence import IntegrityError
from eventsourcing.utils import EnvType

from application.passwords import Passwords, check_password_policy
from application.tokens import Claims, Principal, TokenCodec, TokenPair, new_jti
from domain.account_errors import (
    EmailTaken,
    Forbidden,
    InvalidCredentials,
    InvalidToken,
    OrganizationNotFound,
    TeamNotFound,
    TokenReused,
    TokenRevoked,
    UserNotFound,
    WorkspaceNotFound,
)
from domain.accounts import (
    MANAGING_ROLES,
    WRITING_ROLES,
    Organization,
    Role,
    TokenFamily,
    User,
    check_name,
    check_role,
    normalize_email,
)
from domain.errors import Conflict, InvalidCommand

# Principal and TokenPair are re-exported: the HTTP layer imports the API from here.
__all__ = [
    "AccountService",
    "Membership",
    "Principal",
    "Registration",
    "TokenPair",
    "WorkspaceInfo",
]

A = TypeVar("A", bound=Aggregate)

DEFAULT_TEAM_NAME = "Default"
DEFAULT_WORKSPACE_NAME = "Default"
THIRTY_DAYS = 30 * 24 * 3600
# A login changed by another request while we worked on it is read again this often.
FAMILY_ATTEMPTS = 3


@dataclass(frozen=True)
class Registration:
    user_id: UUID
    organization_id: UUID
    team_id: UUID
    workspace_id: UUID
    notification_id: int


@dataclass(frozen=True)
class WorkspaceInfo:
    workspace_id: UUID
    name: str
    organization_id: UUID
    team_id: UUID
    role: Role


@dataclass(frozen=True)
class Membership:
    organization_id: UUID
    user_id: UUID
    role: Role
    notification_id: int


class AccountService(Application[UUID]):
    """Users, organizations with their teams and workspaces, and logins (token families)."""

    name = "accounts"
    # Every authenticated request reads its token family: keep them in memory.
    env = {"AGGREGATE_CACHE_MAXSIZE": "10000", "COMPRESSOR_TOPIC": ""}

    def __init__(
        self,
        env: EnvType | None = None,
        *,
        jwt_secret: str,
        access_ttl: int = 3600,
        refresh_ttl: int = THIRTY_DAYS,
        clock: Callable[[], float] = time.time,
        hasher: PasswordHasher | None = None,
    ) -> None:
        super().__init__(env)
        self._tokens = TokenCodec(
            jwt_secret, access_ttl=access_ttl, refresh_ttl=refresh_ttl, clock=clock
        )
        self._passwords = Passwords(hasher)

    # -- accounts and logins ------------------------------------------------------

    def register(self, email: str, password: str, name: str) -> Registration:
        """A user with a personal organization, its default team and workspace: all or nothing."""
        # Cheap checks before the deliberately expensive hash.
        email, name = normalize_email(email), check_name(name)
        check_password_policy(password)
        user = User.register(email, name, self._passwords.hash(password))
        organization = Organization.create(name, user.id)
        team_id, workspace_id = uuid4(), uuid4()
        organization.create_team(team_id, DEFAULT_TEAM_NAME)
        organization.create_workspace(workspace_id, team_id, DEFAULT_WORKSPACE_NAME)
        user.join_organization(organization.id, "owner")
        try:
            recordings = self.save(user, organization)
        except IntegrityError:
            # The user id is derived from the email: the email is taken (or was
            # taken a moment ago by a concurrent registration).
            raise EmailTaken() from None
        return Registration(
            user.id, organization.id, team_id, workspace_id, recordings[-1].notification.id
        )

    def login(self, email: str, password: str) -> TokenPair:
        """Tokens for a new login; any failure is the same `InvalidCredentials`."""
        try:
            user = self._get(User, User.id_for(normalize_email(email)))
        except InvalidCommand:
            user = None
        # Verified even when there is no user, so both failures take as long.
        verified = self._passwords.verify(user.password_hash if user else None, password)
        if user is None or not verified:
            raise InvalidCredentials()
        refresh_jti = new_jti()
        family = TokenFamily.start(user.id, refresh_jti)
        self._save(family)
        return self._tokens.pair(user.id, family.id, refresh_jti)

    def refresh(self, refresh_token: str) -> TokenPair:
        """New tokens for a refresh token, which is then spent; a spent one revokes the login."""
        claims = self._tokens.decode(refresh_token, typ="refresh")
        next_jti = new_jti()
        family = self._change_family(claims, lambda f: f.rotate(claims.jti, next_jti))
        return self._tokens.pair(family.user_id, family.id, next_jti)

    def logout(self, token: str) -> None:
        """Revoke the login that `token` (refresh or access) belongs to."""
        # Expiry is not checked: an expired access token may still end its login.
        claims = self._tokens.decode(token, check_expiry=False)
        self._change_family(claims, lambda f: f.revoke("logout"))

    def authenticate(self, access_token: str) -> Principal:
        """Who the access token speaks for, if its login is still live (one cached read)."""
        claims = self._tokens.decode(access_token, typ="access")
        if self._family(claims).revoked:
            raise TokenRevoked()
        return Principal(claims.user_id, claims.family_id, claims.expires_at)

    # -- tenants ----------------------------------------------------------------

    def workspaces_of(self, user_id: UUID) -> list[WorkspaceInfo]:
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
        organization, role = self._membership(user_id, organization_id)
        if role not in MANAGING_ROLES:
            raise Forbidden(f"a {role} cannot create workspaces")
        team_id = team_id or organization.default_team_id
        if team_id is None or team_id not in organization.teams:
            raise TeamNotFound(team_id or "default")
        workspace_id = uuid4()
        organization.create_workspace(workspace_id, team_id, name)
        self._save(organization)
        _, workspace_name = organization.workspaces[workspace_id]
        return WorkspaceInfo(workspace_id, workspace_name, organization.id, team_id, role)

    def role_in_workspace(self, user_id: UUID, workspace_id: UUID) -> Role | None:
        for organization, role in self._memberships(user_id):
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

    # -- plumbing ---------------------------------------------------------------

    def _get(self, kind: type[A], aggregate_id: UUID) -> A | None:
        try:
            aggregate: object = self.repository.get(aggregate_id)
        except AggregateNotFoundError:
            return None
        # All kinds share one store; an id of the wrong kind is as good as missing.
        return aggregate if isinstance(aggregate, kind) else None

    def _save(self, *aggregates: Aggregate) -> int:
        """Save together; the last notification id (0 if nothing was pending)."""
        try:
            recordings = self.save(*aggregates)
        except IntegrityError:
            raise Conflict("changed by another request; try again") from None
        return recordings[-1].notification.id if recordings else 0

    def _family(self, claims: Claims) -> TokenFamily:
        family = self._get(TokenFamily, claims.family_id)
        if family is None or family.user_id != claims.user_id:
            raise InvalidToken()
        return family

    def _change_family(self, claims: Claims, command: Callable[[TokenFamily], None]) -> TokenFamily:
        """Get the login, run the command, save; after a lost race, again on the news.

        Two refreshes racing with one token: the loser finds the token spent by the
        winner, which is a reuse, and revokes the login (no grace window).
        """
        for _ in range(FAMILY_ATTEMPTS):
            family = self._family(claims)
            try:
                command(family)
            except TokenReused:
                # The command recorded the revocation: store it, then answer.
                if self._saved(family):
                    raise
                continue
            if self._saved(family):
                return family
        raise Conflict("the login changed too often meanwhile; try again")

    def _saved(self, family: TokenFamily) -> bool:
        try:
            self.save(family)
        except IntegrityError:
            return False
        return True

    def _memberships(self, user_id: UUID) -> Iterator[tuple[Organization, Role]]:
        """The user's organizations with its role in each, read from the aggregates."""
        user = self._get(User, user_id)
        for organization_id in user.organization_ids if user else []:
            organization = self._get(Organization, organization_id)
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

    @staticmethod
    def _check_may_grant(actor_role: Role, role: Role) -> None:
        if actor_role not in MANAGING_ROLES:
            raise Forbidden(f"a {actor_role} cannot manage members")
        if role == "owner" and actor_role != "owner":
            raise Forbidden("only an owner can grant or take away the owner role")
