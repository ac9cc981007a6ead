"""HTTP bodies of teams, members, invitations, API keys and profiles."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

import msgspec
from msgspec import Meta

from schemas.api import Email, Name, Password, SessionSettings
from schemas.sse import JsonValue

Role = Literal["owner", "admin", "member", "viewer"]
Url = Annotated[str, Meta(min_length=1, max_length=2048, pattern=r"^https?://\S+$")]


# -- teams and members --------------------------------------------------------------


class TeamBody(msgspec.Struct, forbid_unknown_fields=True):
    name: Name


class TeamOut(msgspec.Struct, kw_only=True):
    id: UUID
    name: str
    organization_id: UUID
    created_at: datetime | None = None
    role: Role | None = None  # the caller's
    member_count: int | None = None


class TeamPage(msgspec.Struct):
    items: list[TeamOut]


class MemberBody(msgspec.Struct, forbid_unknown_fields=True):
    email: Email
    role: Role = "member"


class RoleBody(msgspec.Struct, forbid_unknown_fields=True):
    role: Role


class MemberOut(msgspec.Struct, kw_only=True):
    user_id: UUID
    email: str
    name: str
    role: Role
    joined_at: datetime | None = None


class MemberPage(msgspec.Struct):
    items: list[MemberOut]


class InvitationOut(msgspec.Struct, kw_only=True):
    """An invitation to an email nobody registered yet; `token` is shown this once."""

    invitation_id: UUID
    email: str
    role: Role
    expires_at: datetime
    token: str


class WorkspacePatch(msgspec.Struct, forbid_unknown_fields=True):
    name: Name | None = None
    settings: SessionSettings | None = None  # the defaults of the workspace's new sessions


# -- API keys ------------------------------------------------------------------------


class ApiKeyBody(msgspec.Struct, forbid_unknown_fields=True):
    name: Name
    role: Role = "member"
    workspace_id: UUID | None = None
    expires_at: datetime | None = None


class ApiKeyOut(msgspec.Struct, kw_only=True):
    id: UUID
    name: str
    prefix: str
    role: Role
    workspace_id: UUID | None
    created_at: datetime
    expires_at: datetime | None
    revoked: bool = False
    last_used_at: datetime | None = None
    uses: int = 0


class ApiKeyCreated(msgspec.Struct, kw_only=True):
    """A new key: `key` is shown this once and never again."""

    id: UUID
    name: str
    prefix: str
    key: str
    role: Role
    workspace_id: UUID | None
    created_at: datetime
    expires_at: datetime | None


class ApiKeyPage(msgspec.Struct):
    items: list[ApiKeyOut]


# -- the caller's profile --------------------------------------------------------------


class ProfilePatch(msgspec.Struct, forbid_unknown_fields=True):
    """Fields to change; `avatar_url: null` clears it."""

    name: Name | None = None
    avatar_url: Url | msgspec.UnsetType | None = msgspec.UNSET
    preferences: dict[str, JsonValue] | None = None


class PasswordBody(msgspec.Struct, forbid_unknown_fields=True):
    old_password: Annotated[str, Meta(min_length=1, max_length=1024)]
    new_password: Password
