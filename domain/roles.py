"""Roles and what each may do: the one policy table every check reads.

A role is held in an organization (over all its teams) or in one team; a caller's
role where it acts is the higher of the two, capped by the API key it calls with (a
key never exceeds the role it was given). `POLICY` names the least role each action
takes; `require` is the check, and docs/api.md prints the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol
from uuid import UUID

from domain.account_errors import Forbidden
from domain.errors import InvalidValue

Role = Literal["owner", "admin", "member", "viewer"]
ROLES: tuple[Role, ...] = ("owner", "admin", "member", "viewer")
RANK: dict[Role, int] = {"viewer": 0, "member": 1, "admin": 2, "owner": 3}

Action = Literal[
    "read",
    "write",
    "approve_others",
    "manage_members",
    "manage_workspaces",
    "manage_budgets",
    "grant_owner",
    "delete_team",
]

# action -> (the least role it takes, what it covers: printed by docs/api.md)
POLICY: dict[Action, tuple[Role, str]] = {
    "read": ("viewer", "read sessions, their streams, events, artifacts, files and usage"),
    "write": (
        "member",
        "create sessions, chat, approve or reject the tool calls of their own runs, stop, "
        "fork, replay, upload and delete files, write workspace memories",
    ),
    "approve_others": ("admin", "approve or reject the tool calls of another member's run"),
    "manage_members": ("admin", "add, invite, re-role and remove team members (not owners)"),
    "manage_workspaces": ("admin", "create teams and workspaces, rename them, change settings"),
    "manage_budgets": ("admin", "set and remove budgets, read every member's usage"),
    "grant_owner": ("owner", "grant or take away the owner role (hand a team on), remove an owner"),
    "delete_team": ("owner", "delete a team with its workspaces (their sessions stay in the log)"),
}


def check_role(role: str) -> Role:
    for known in ROLES:
        if role == known:
            return known
    raise InvalidValue(f"role must be one of {', '.join(ROLES)}")


def allows(role: Role, action: Action) -> bool:
    return RANK[role] >= RANK[POLICY[action][0]]


def require(role: Role, action: Action, what: str = "") -> Role:
    """The role, if it may take the action; `Forbidden` naming the role it lacks."""
    if not allows(role, action):
        needed = POLICY[action][0]
        doing = what or action.replace("_", " ")
        raise Forbidden(f"{doing} needs the {needed} role or higher; you act as {role}")
    return role


def higher(a: Role | None, b: Role | None) -> Role | None:
    if a is None or b is None:
        return a or b
    return a if RANK[a] >= RANK[b] else b


def capped(role: Role, cap: Role | None) -> Role:
    """The role, lowered to `cap` (an API key's role) when that is lower."""
    return role if cap is None or RANK[cap] >= RANK[role] else cap


class Actor(Protocol):
    """Who acts: a user, maybe through an API key that caps its role and workspace."""

    @property
    def user_id(self) -> UUID: ...

    @property
    def role_cap(self) -> Role | None: ...

    @property
    def workspace_id(self) -> UUID | None: ...


@dataclass(frozen=True)
class UserActor:
    """A user acting with all its rights (a login, the CLI, the agent for its owner)."""

    user_id: UUID
    role_cap: Role | None = None
    workspace_id: UUID | None = None


def actor_of(who: UUID | Actor) -> Actor:
    return UserActor(who) if isinstance(who, UUID) else who


def policy_table() -> str:
    """The policy as a Markdown table (docs/api.md prints it)."""
    lines = ["| action | least role | what it covers |", "| --- | --- | --- |"]
    lines += [f"| `{a}` | {role} | {what} |" for a, (role, what) in POLICY.items()]
    return "\n".join(lines)
