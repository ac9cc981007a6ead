"""Who may read and write which memory namespace.

- `user:<id>`: that user alone.
- `workspace:<id>`: the members of the workspace's organization; writing takes a role
  that may change the workspace (owner, admin, member).
- `team:<id>`: the team's shared knowledge base, readable by the members of its
  organization and writable by its owners and admins.

A namespace the caller may not see answers as not found, like a workspace it cannot
see; one it may see but not change answers 403. The agent of a session acts for the
session's owner, with the owner's roles.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from application.tenants import Tenants
from domain.account_errors import Forbidden
from domain.accounts import MANAGING_ROLES, WRITING_ROLES, Role
from domain.errors import NotFound
from domain.memory_values import Namespace


class NamespaceNotFound(NotFound):
    code = "NAMESPACE_NOT_FOUND"

    def __init__(self, namespace: Namespace | str) -> None:
        super().__init__(f"no memory namespace {namespace} that you may use")
        self.namespace = namespace


@dataclass(frozen=True)
class Grant:
    """A namespace the caller may use: its tenant, and whether the caller may change it."""

    namespace: Namespace
    organization_id: UUID | None  # None for a user's own
    writable: bool


class MemoryAccess:
    """Namespaces a user may use, from the organizations, teams and workspaces they
    belong to (blocking: call through the bridge)."""

    def __init__(self, tenants: Tenants) -> None:
        self.tenants = tenants

    def grants(self, user_id: UUID) -> list[Grant]:
        """Every namespace the user may read: their own, their workspaces', their teams'."""
        roles = self.tenants.organization_roles(user_id)
        profile = self.tenants.profile(user_id)
        found = [Grant(Namespace("user", user_id), None, True)]
        found += [
            Grant(
                Namespace("workspace", w.workspace_id), w.organization_id, w.role in WRITING_ROLES
            )
            for w in profile.workspaces
        ]
        found += [
            Grant(
                Namespace("team", t.team_id), t.organization_id, _manages(roles, t.organization_id)
            )
            for t in profile.teams
        ]
        return found

    def readable(self, user_id: UUID) -> list[Namespace]:
        return [g.namespace for g in self.grants(user_id)]

    def check(self, user_id: UUID, namespace: Namespace, *, write: bool) -> Grant:
        """The grant for `namespace`: `NamespaceNotFound` if the user may not see it,
        `Forbidden` if they may see it but `write` and may not change it."""
        for grant in self.grants(user_id):
            if grant.namespace == namespace:
                if write and not grant.writable:
                    raise Forbidden(f"your role may read {namespace} but not change it")
                return grant
        raise NamespaceNotFound(namespace)


def _manages(roles: dict[UUID, Role], organization_id: UUID) -> bool:
    return roles.get(organization_id) in MANAGING_ROLES
