"""API keys: long-lived credentials for services, each acting for the user who made it.

A key is shown once; only its SHA-256 is kept, and the key's aggregate id is derived
from that hash, so authenticating a key is one read by id and the store never holds
anything a key could be rebuilt from.
"""

from __future__ import annotations

import secrets
from base64 import b32encode
from datetime import datetime
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from domain.account_values import check_name, secret_digest
from domain.errors import InvalidCommand, InvalidValue
from domain.roles import Role, check_role

KEY_PREFIX = "tdk_"
KEY_BYTES = 32
SHOWN_PREFIX_CHARS = 12  # "tdk_" and 8 characters: enough to tell keys apart in a list
# Fixed forever: key ids are derived from it.
API_KEY_NAMESPACE = UUID("0e3c4f1e-8d0a-4f5e-b1c2-6a7d9e2f4b13")


def new_key() -> str:
    """`tdk_` and 32 random bytes in base32 (lower case, no padding)."""
    return KEY_PREFIX + b32encode(secrets.token_bytes(KEY_BYTES)).decode().rstrip("=").lower()


def looks_like_key(credential: str) -> bool:
    return credential.startswith(KEY_PREFIX)


class ApiKey(Aggregate):
    """One API key: whose it is, the most it may do, where, and until when."""

    class ApiKeyIssued(Aggregate.Created):
        key_digest: str  # the key's SHA-256: its id is derived from it
        user_id: UUID
        name: str
        prefix: str
        role: Role
        workspace_id: UUID | None
        expires_at: datetime | None

    class ApiKeyRevoked(Aggregate.Event):
        reason: str

    @staticmethod
    def id_for(key: str) -> UUID:
        return uuid5(API_KEY_NAMESPACE, secret_digest(key))

    @staticmethod
    def create_id(key_digest: str) -> UUID:
        return uuid5(API_KEY_NAMESPACE, key_digest)

    @event(ApiKeyIssued)
    def __init__(
        self,
        key_digest: str,
        user_id: UUID,
        name: str,
        prefix: str,
        role: Role,
        workspace_id: UUID | None,
        expires_at: datetime | None,
    ) -> None:
        self.user_id = user_id
        self.name = name
        self.prefix = prefix
        self.role: Role = role
        self.workspace_id = workspace_id
        self.expires_at = expires_at
        self.revoked = False

    @classmethod
    def issue(
        cls,
        key: str,
        user_id: UUID,
        name: str,
        role: str,
        workspace_id: UUID | None,
        expires_at: datetime | None,
        now: datetime,
    ) -> ApiKey:
        """A key record for `key` (made by `new_key`); the key itself is not kept."""
        if not looks_like_key(key):
            raise InvalidCommand("an API key starts with tdk_")
        if expires_at is not None:
            if expires_at.tzinfo is None:
                raise InvalidValue("expires_at needs a time zone (e.g. 2027-01-01T00:00:00Z)")
            if expires_at <= now:
                raise InvalidValue("expires_at must be in the future")
        return cls(
            secret_digest(key),
            user_id,
            check_name(name, "API key name"),
            key[:SHOWN_PREFIX_CHARS],
            check_role(role),
            workspace_id,
            expires_at,
        )

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and self.expires_at <= now

    def revoke(self, reason: str) -> None:
        """Revoke the key; revoking it again records nothing."""
        if not self.revoked:
            self._revoked(reason)

    @event(ApiKeyRevoked)
    def _revoked(self, reason: str) -> None:
        self.revoked = True


ApiKeyEvent = ApiKey.ApiKeyIssued | ApiKey.ApiKeyRevoked
API_KEY_EVENT_CLASSES: tuple[type[ApiKeyEvent], ...] = ApiKeyEvent.__args__
