"""Use cases of signing up and logging in: register, log in, refresh, log out, authenticate."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from uuid import UUID, uuid4

from eventsourcing.domain import Aggregate
from eventsourcing.persistence import IntegrityError

from application.api_keys import ApiKeys
from application.passwords import Passwords, check_password_policy
from application.tokens import Claims, Principal, TokenCodec, TokenPair, new_jti
from domain.account_errors import (
    EmailTaken,
    InvalidCredentials,
    InvalidToken,
    TokenExpired,
    TokenReused,
    TokenRevoked,
)
from domain.accounts import Organization, TokenFamily, User, check_name, normalize_email
from domain.api_keys import ApiKey, looks_like_key
from domain.errors import Conflict, InvalidCommand, NotFound

DEFAULT_TEAM_NAME = "Default"
DEFAULT_WORKSPACE_NAME = "Default"
# A login changed by another request while we worked on it is read again this often.
FAMILY_ATTEMPTS = 3
PASSWORD_CHANGED = "password changed"
NEVER = 2**62  # the expiry of a key that has none


@dataclass(frozen=True)
class Registration:
    user_id: UUID
    organization_id: UUID
    team_id: UUID
    workspace_id: UUID
    notification_id: int


class Logins(ApiKeys):
    """Registration, and the token family of each login (or an API key)."""

    _tokens: TokenCodec
    _passwords: Passwords

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
        if user is None or not verified or user.erased:
            raise InvalidCredentials()
        return self.start_login(user)

    def new_login(self, user_id: UUID) -> TokenPair:
        """Tokens of a new login of a user whose credentials the caller has checked."""
        user = self._get(User, user_id)
        if user is None or user.erased:
            raise InvalidToken()
        return self.start_login(user)

    def start_login(self, user: User) -> TokenPair:
        """Tokens of a new login of the user (its password checked by the caller)."""
        refresh_jti = new_jti()
        family = TokenFamily.start(user.id, refresh_jti, user.credentials_epoch)
        self._save(family)
        return self._tokens.pair(user.id, family.id, refresh_jti)

    def refresh(self, refresh_token: str) -> TokenPair:
        """New tokens for a refresh token, which is then spent; a spent one revokes the
        login, and so does a password changed since the login began."""
        claims = self._tokens.decode(refresh_token, typ="refresh")
        user = self._get(User, claims.user_id, copy=False)
        family = self._family(claims, copy=False)
        if user is None or user.credentials_epoch != family.epoch:
            self._change_family(claims, lambda f: f.revoke(PASSWORD_CHANGED))
            raise TokenRevoked()
        next_jti = new_jti()
        family = self._change_family(claims, lambda f: f.rotate(claims.jti, next_jti))
        return self._tokens.pair(family.user_id, family.id, next_jti)

    def logout(self, token: str) -> None:
        """Revoke the login that `token` (refresh or access) belongs to."""
        # Expiry is not checked: an expired access token may still end its login.
        claims = self._tokens.decode(token, check_expiry=False)
        self._change_family(claims, lambda f: f.revoke("logout"))

    def authenticate(self, credential: str) -> Principal:
        """Who an access token (if its login is still live: one cached read) or an API
        key speaks for."""
        if looks_like_key(credential):
            grant = self.authenticate_key(credential)
            until = int(grant.expires_at.timestamp()) if grant.expires_at else NEVER
            return Principal(
                grant.user_id, grant.api_key_id, until, grant.api_key_id, grant.role,
                grant.workspace_id,
            )  # fmt: skip
        claims = self._tokens.decode(credential, typ="access")
        if self._family(claims, copy=False).revoked:
            raise TokenRevoked()
        return Principal(claims.user_id, claims.family_id, claims.expires_at)

    def check_live(self, principal: Principal) -> None:
        """Raise the `AuthError` a request with this principal's credential would get
        now: its login revoked, or its API key revoked or expired."""
        if principal.api_key_id is None:
            family = self._get(TokenFamily, principal.family_id, copy=False)
            if family is None or family.revoked:
                raise TokenRevoked()
            return
        api_key = self._get(ApiKey, principal.api_key_id, copy=False)
        if api_key is None or api_key.revoked:
            raise TokenRevoked()
        if api_key.expired(self._now()):
            raise TokenExpired()

    def find_user(self, user_id: UUID) -> User | None:
        return self._get(User, user_id, copy=False)

    def erase_account(self, user_id: UUID, by: UUID | None, logins: Sequence[UUID]) -> bool:
        """Record the user's erasure, end `logins` (its token families) and revoke its API
        keys; False if it was recorded before (the rest is done again: a retry after a
        crash finishes the work)."""
        user = self._get(User, user_id)
        if user is None:
            raise NotFound(f"no user {user_id}")
        first = not user.erased
        user.erase(by)
        ended: list[Aggregate] = [user]
        for family_id in logins:
            family = self._get(TokenFamily, family_id)
            if family is not None and family.user_id == user_id:
                family.revoke("erased")
                ended.append(family)
        for key_id in user.api_key_ids:
            api_key = self._get(ApiKey, key_id)
            if api_key is not None:
                api_key.revoke("erased")
                ended.append(api_key)
        self._save(*ended)
        return first

    # -- token families -----------------------------------------------------------

    def _family(self, claims: Claims, *, copy: bool = True) -> TokenFamily:
        family = self._get(TokenFamily, claims.family_id, copy=copy)
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
