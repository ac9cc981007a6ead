"""Queries on the accounts read model: workspaces by user, members, teams, API keys."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from eventsourcing.postgres import PostgresDatastore

from application.accounts import WorkspaceInfo
from domain.roles import Actor, Role, actor_of, capped, check_role, higher
from domain.values import SessionSettings

# A workspace row with the user's two roles: over its organization, and in its team.
WORKSPACES = """
    SELECT w.workspace_id, w.name, w.organization_id, w.team_id, w.settings, w.created_at,
           m.role AS org_role, tm.role AS team_role
    FROM accounts_members m
    JOIN accounts_workspaces w ON w.organization_id = m.organization_id
    LEFT JOIN accounts_team_members tm ON tm.team_id = w.team_id AND tm.user_id = m.user_id
    WHERE m.user_id = %s AND m.joined IS NOT NULL AND (m.role IS NOT NULL OR tm.role IS NOT NULL)
    ORDER BY m.joined, w.version
"""
# Everyone with a role in a team: its own members, and its organization's members.
TEAM_MEMBERS = """
    SELECT u.user_id, u.email, u.name, tm.role AS team_role, m.role AS org_role,
           coalesce(tm.joined_at, t.created_at) AS joined_at
    FROM accounts_teams t
    JOIN accounts_users u ON true
    LEFT JOIN accounts_team_members tm ON tm.team_id = t.team_id AND tm.user_id = u.user_id
    LEFT JOIN accounts_members m
      ON m.organization_id = t.organization_id AND m.user_id = u.user_id
      AND m.role IS NOT NULL AND m.joined IS NOT NULL
    WHERE t.team_id = %s AND (tm.role IS NOT NULL OR m.role IS NOT NULL)
    ORDER BY joined_at, u.user_id
"""


@dataclass(frozen=True)
class MemberRow:
    """A member of an organization, as the view holds it."""

    organization_id: UUID
    user_id: UUID
    role: Role
    email: str
    name: str


@dataclass(frozen=True)
class TeamMemberRow:
    """Someone with a role in a team (its own, or its organization's if higher)."""

    user_id: UUID
    email: str
    name: str
    role: Role
    joined_at: datetime


@dataclass(frozen=True)
class ApiKeyUse:
    uses: int
    last_used_at: datetime | None


class AccountQueries:
    """What the accounts read model answers."""

    datastore: PostgresDatastore

    def workspaces_of(self, who: UUID | Actor) -> list[WorkspaceInfo]:
        """The actor's workspaces with its role: organizations in joining order, then
        workspaces in creation order (as the aggregates list them)."""
        actor = actor_of(who)
        with self.datastore.get_connection() as conn:
            rows = conn.execute(WORKSPACES, (actor.user_id,)).fetchall()
        found = []
        for r in rows:
            role = higher(_role(r["org_role"]), _role(r["team_role"]))
            if role is None or actor.workspace_id not in (None, r["workspace_id"]):
                continue
            found.append(
                WorkspaceInfo(
                    r["workspace_id"], r["name"], r["organization_id"], r["team_id"],
                    capped(role, actor.role_cap), r["created_at"],
                    SessionSettings.of(r["settings"]),
                )
            )  # fmt: skip
        return found

    def members(self, organization_id: UUID) -> list[MemberRow]:
        """The organization's members (both halves recorded), in joining order."""
        with self.datastore.get_connection() as conn:
            rows = conn.execute(
                "SELECT organization_id, user_id, role, email, name FROM accounts_members "
                "WHERE organization_id = %s AND role IS NOT NULL AND joined IS NOT NULL "
                "ORDER BY joined, user_id",
                (organization_id,),
            ).fetchall()
        return [
            MemberRow(r["organization_id"], r["user_id"], check_role(r["role"]),
                      r["email"] or "", r["name"] or "")
            for r in rows
        ]  # fmt: skip

    def team_members(self, team_id: UUID) -> list[TeamMemberRow]:
        """Everyone with a role in the team, in joining order."""
        with self.datastore.get_connection() as conn:
            rows = conn.execute(TEAM_MEMBERS, (team_id,)).fetchall()
        return [
            TeamMemberRow(
                r["user_id"], r["email"], r["name"],
                higher(_role(r["org_role"]), _role(r["team_role"])) or "viewer", r["joined_at"],
            )
            for r in rows
        ]  # fmt: skip

    def organization_of_team(self, team_id: UUID) -> UUID | None:
        with self.datastore.get_connection() as conn:
            row = conn.execute(
                "SELECT organization_id FROM accounts_teams WHERE team_id = %s", (team_id,)
            ).fetchone()
        return None if row is None else UUID(str(row["organization_id"]))

    def teams(self, organization_id: UUID) -> dict[UUID, str]:
        """The organization's teams by id, in creation order."""
        with self.datastore.get_connection() as conn:
            rows = conn.execute(
                "SELECT team_id, name FROM accounts_teams WHERE organization_id = %s "
                "ORDER BY created_at, team_id",
                (organization_id,),
            ).fetchall()
        return {r["team_id"]: r["name"] for r in rows}


def _role(value: object) -> Role | None:
    return None if value is None else check_role(str(value))


def team_created(datastore: PostgresDatastore, team_ids: list[UUID]) -> dict[UUID, datetime]:
    """When each team was made."""
    with datastore.get_connection() as conn:
        rows = conn.execute(
            "SELECT team_id, created_at FROM accounts_teams WHERE team_id = ANY(%s)", (team_ids,)
        ).fetchall()
    return {r["team_id"]: r["created_at"] for r in rows}
