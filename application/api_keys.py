"""Use cases on API keys: make one (shown once), list, revoke, and authenticate a call.

A key acts as the user who made it, with at most the role it was given and only in
its workspace when it names one; its rights are the user's current ones, capped, so a
member removed from a team loses them through every key at once.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from uuid import UUID

from application.tenants import Tenants
from domain.account_errors import (
    ApiKeyNotFound,
    Forbidden,
    InvalidToken,
    TokenExpired,
    TokenRevoked,
)
from domain.accounts import User
from domain.api_keys import ApiKey, new_key
from domain.roles import Actor, Role, actor_of

REVOKED_BY_USER = "revoked by its user"


@dataclass(frozen=True)
class KeyGrant:
    """What a presented key may do: whose it is, the most it may do, and where."""

    api_key_id: UUID
    user_id: UUID
    role: Role
    workspace_id: UUID | None
    expires_at: datetime | None


@dataclass(frozen=True)
class IssuedKey:
    """A key just made: the key itself is in `key` this once, never again."""

    api_key: ApiKey
    key: str


class ApiKeys(Tenants):
    """API keys of users."""

    _clock: Callable[[], float]

    def create_api_key(
        self,
        who: UUID | Actor,
        name: str,
        role: str,
        workspace_id: UUID | None = None,
        expires_at: datetime | None = None,
    ) -> IssuedKey:
        actor = actor_of(who)
        if actor.role_cap is not None:
            raise Forbidden("an API key cannot make API keys; log in to make one")
        if workspace_id is not None:
            self.workspace_of(actor, workspace_id)  # NotFound unless the user sees it
        user = self._get(User, actor.user_id)
        if user is None:
            raise InvalidToken()
        key = new_key()
        api_key = ApiKey.issue(key, user.id, name, role, workspace_id, expires_at, self._now())
        user.add_api_key(api_key.id)
        self._save(api_key, user)
        return IssuedKey(api_key, key)

    def api_keys_of(self, user_id: UUID) -> list[ApiKey]:
        """The user's keys, newest first (revoked ones included, marked)."""
        user = self._get(User, user_id)
        keys = [self._get(ApiKey, k) for k in user.api_key_ids] if user else []
        return [k for k in reversed(keys) if k is not None]

    def revoke_api_key(self, who: UUID | Actor, api_key_id: UUID) -> None:
        """Revoke at once: the next call with the key answers 401."""
        actor = actor_of(who)
        if actor.role_cap is not None:
            raise Forbidden("an API key cannot revoke API keys; log in to revoke one")
        api_key = self._get(ApiKey, api_key_id)
        if api_key is None or api_key.user_id != actor.user_id:
            raise ApiKeyNotFound(api_key_id)
        api_key.revoke(REVOKED_BY_USER)
        self._save(api_key)

    def authenticate_key(self, key: str) -> KeyGrant:
        """The grant of a live key of a live user; 401 for anything else."""
        api_key = self._get(ApiKey, ApiKey.id_for(key), copy=False)
        if api_key is None:
            raise InvalidToken()
        if api_key.revoked:
            raise TokenRevoked()
        if api_key.expired(self._now()):
            raise TokenExpired()
        user = self._get(User, api_key.user_id, copy=False)
        if user is None or user.erased:
            raise InvalidToken()  # its user is gone
        return KeyGrant(
            api_key.id, api_key.user_id, api_key.role, api_key.workspace_id, api_key.expires_at
        )

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock(), UTC)
