"""The accounts application: registration and logins, and tenants, in one event store.

Its events go to their own table (`accounts_events`: the library's Postgres factory
names tables after the application), apart from the agent sessions' log. The use
cases live in `application.logins` and `application.tenants`; this module puts them
together and is where other layers import them from.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from argon2 import PasswordHasher
from eventsourcing.utils import EnvType

from application.budgets import Budgets
from application.logins import Logins, Registration
from application.mcp_servers import McpServerRegistry
from application.passwords import Passwords
from application.profiles import Profiles
from application.team_members import DEFAULT_INVITATION_TTL, TeamMembers, check_invitation_ttl
from application.tenants import Membership, TeamInfo, WorkspaceInfo
from application.tokens import Principal, TokenCodec, TokenPair

# Principal and TokenPair are re-exported: the HTTP layer imports the API from here.
__all__ = [
    "AccountService",
    "Membership",
    "Principal",
    "Registration",
    "TeamInfo",
    "TokenPair",
    "WorkspaceInfo",
]

THIRTY_DAYS = 30 * 24 * 3600


class AccountService(Logins, TeamMembers, Profiles, Budgets, McpServerRegistry):
    """Users, organizations with their teams and workspaces, and logins (token families)."""

    name = "accounts"
    # Every authenticated request reads its token family: keep them in memory.
    env = {"AGGREGATE_CACHE_MAXSIZE": "10000", "COMPRESSOR_TOPIC": ""}
    # Memory namespaces are snapshotted by `application.memories` as they grow.
    is_snapshotting_enabled = True

    def __init__(
        self,
        env: EnvType | None = None,
        *,
        jwt_secret: str,
        access_ttl: int = 3600,
        refresh_ttl: int = THIRTY_DAYS,
        clock: Callable[[], float] = time.time,
        hasher: PasswordHasher | None = None,
        invitation_ttl: int = DEFAULT_INVITATION_TTL,
    ) -> None:
        super().__init__(env)
        self._clock = clock
        self.invitation_ttl = check_invitation_ttl(invitation_ttl)
        self._tokens = TokenCodec(
            jwt_secret, access_ttl=access_ttl, refresh_ttl=refresh_ttl, clock=clock
        )
        self._passwords = Passwords(hasher)
