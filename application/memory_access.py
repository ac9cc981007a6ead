"""Who may read and write which memory namespace.

- `user:<id>`: that user alone.
- `workspace:<id>`: whoever has a role in the workspace (through its organization or
  its team); writing takes a role that may change the workspace (owner, admin, member).
- `team:<id>`: the team's shared knowledge base, readable by whoever has a role in the
  team and writable by its owners and admins.

A namespace the caller may not see answers as not found, like a workspace it cannot
see; one it may see but not change answers 403. The agent of a session acts for the
session's owner, with the owner's roles.
"""

from __future__ import annotations

from dataclasses import dataclass
from uuid import UUID

from application.tenants import Tenants
from domain.account_errors import Forbidden
from domain.errors import NotFound
from domain.memory_values import Namespace
from domain.roles import Actor, actor_of, allows


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

    def grants(self, who: UUID | Actor) -> list[Grant]:
        """Every namespace the user may read: their own, their workspaces', their teams'."""
        actor = actor_of(who)
        found = [Grant(Namespace("user", actor.user_id), None, True)]
        found += [
            Grant(
                Namespace("workspace", w.workspace_id), w.organization_id, allows(w.role, "write")
            )
            for w in self.tenants.workspaces_of(actor)
        ]
        found += [
            Grant(
                Namespace("team", t.team_id),
                t.organization_id,
                t.role is not None and allows(t.role, "manage_workspaces"),
            )
            for t in self.tenants.teams_of(actor)
        ]
        return found

    def readable(self, who: UUID | Actor) -> list[Namespace]:
        return [g.namespace for g in self.grants(who)]

    def check(self, who: UUID | Actor, namespace: Namespace, *, write: bool) -> Grant:
        """The grant for `namespace`: `NamespaceNotFound` if the user may not see it,
        `Forbidden` if they may see it but `write` and may not change it."""
        for grant in self.grants(who):
            if grant.namespace == namespace:
                if write and not grant.writable:
                    raise Forbidden(f"your role may read {namespace} but not change it")
                return grant
        raise NamespaceNotFound(namespace)
