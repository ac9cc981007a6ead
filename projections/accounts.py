"""The accounts read model: organizations, teams, workspaces and members.

Fed from the accounts application's log (its own stream), never the sessions' one.
A membership is recorded by two aggregates (the organization grants the role, the
user lists the organization it joined), in either order within one save: a member
row is upserted from both sides and counts once both halves are in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import assert_never
from uuid import UUID

from psycopg import Cursor
from psycopg.rows import DictRow

from application.accounts import AccountService, WorkspaceInfo
from domain.accounts import (
    ACCOUNT_EVENT_CLASSES,
    AccountEvent,
    Organization,
    Role,
    TokenFamily,
    User,
    check_role,
)
from domain.budgets import Budget
from domain.memories import MemoryNamespace
from domain.workspace_files import WorkspaceFolder
from projections.view import Event, View

TABLES = (
    "accounts_organizations",
    "accounts_teams",
    "accounts_workspaces",
    "accounts_users",
    "accounts_members",
)


@dataclass(frozen=True)
class MemberRow:
    """A member of an organization, as the view holds it."""

    organization_id: UUID
    user_id: UUID
    role: Role
    email: str
    name: str


class AccountsView(View):
    """Organizations with their teams, workspaces and members (role, email, name)."""

    name = "accounts"
    create_statements = (
        """CREATE TABLE IF NOT EXISTS accounts_organizations (
            organization_id uuid PRIMARY KEY,
            name text NOT NULL,
            owner_id uuid NOT NULL,
            created_at timestamptz NOT NULL
        )""",
        """CREATE TABLE IF NOT EXISTS accounts_teams (
            team_id uuid PRIMARY KEY,
            organization_id uuid NOT NULL,
            name text NOT NULL,
            created_at timestamptz NOT NULL
        )""",
        # `version` is the organization's version at creation: the aggregate's order.
        """CREATE TABLE IF NOT EXISTS accounts_workspaces (
            workspace_id uuid PRIMARY KEY,
            organization_id uuid NOT NULL,
            team_id uuid NOT NULL,
            name text NOT NULL,
            created_at timestamptz NOT NULL,
            version bigint NOT NULL
        )""",
        """CREATE INDEX IF NOT EXISTS accounts_workspaces_by_organization
            ON accounts_workspaces (organization_id, version)""",
        # Kept so a member row gets its email and name whichever event comes first.
        """CREATE TABLE IF NOT EXISTS accounts_users (
            user_id uuid PRIMARY KEY,
            email text NOT NULL,
            name text NOT NULL,
            registered_at timestamptz NOT NULL
        )""",
        # `role` comes from the organization, `joined` (the user's version when it
        # joined: the joining order) from the user; either may arrive first.
        """CREATE TABLE IF NOT EXISTS accounts_members (
            organization_id uuid NOT NULL,
            user_id uuid NOT NULL,
            role text,
            joined bigint,
            email text,
            name text,
            PRIMARY KEY (organization_id, user_id)
        )""",
        """CREATE INDEX IF NOT EXISTS accounts_members_by_user ON accounts_members (user_id)""",
    )
    clear_statements = tuple(f"DELETE FROM {table}" for table in TABLES)

    def apply_event(self, curs: Cursor[DictRow], event: Event) -> None:
        if not isinstance(event, ACCOUNT_EVENT_CLASSES):
            raise TypeError(f"not an account event: {event!r}")
        self._apply(curs, event)

    def _apply(self, curs: Cursor[DictRow], event: AccountEvent) -> None:
        match event:
            case User.UserRegistered(email=email, name=name):
                _register(curs, event.originator_id, email, name, event)
            case User.OrganizationJoined(organization_id=organization_id):
                _upsert_member(
                    curs, organization_id, event.originator_id, "joined", event.originator_version
                )
            case Organization.OrganizationCreated(name=name, owner_id=owner_id):
                curs.execute(
                    "INSERT INTO accounts_organizations VALUES (%s, %s, %s, %s)",
                    (event.originator_id, name, owner_id, event.timestamp),
                )
                _upsert_member(curs, event.originator_id, owner_id, "role", "owner")
            case (
                Organization.MemberAdded(user_id=user_id, role=role)
                | Organization.MemberRoleChanged(user_id=user_id, role=role)
            ):
                _upsert_member(curs, event.originator_id, user_id, "role", role)
            case Organization.TeamCreated(team_id=team_id, name=name):
                curs.execute(
                    "INSERT INTO accounts_teams VALUES (%s, %s, %s, %s)",
                    (team_id, event.originator_id, name, event.timestamp),
                )
            case Organization.WorkspaceCreated(workspace_id=wid, team_id=team_id, name=name):
                curs.execute(
                    "INSERT INTO accounts_workspaces VALUES (%s, %s, %s, %s, %s, %s)",
                    (wid, event.originator_id, team_id, name, event.timestamp,
                     event.originator_version),
                )  # fmt: skip
            case (
                TokenFamily.TokenFamilyStarted()
                | TokenFamily.RefreshTokenRotated()
                | TokenFamily.TokenFamilyRevoked()
            ):
                pass  # logins are not part of this read model
            case (
                Budget.BudgetCreated()
                | Budget.BudgetSet()
                | Budget.BudgetRemoved()
                | Budget.ThresholdCrossed()
            ):
                pass  # budgets have a read model of their own
            case (
                WorkspaceFolder.FolderCreated()
                | WorkspaceFolder.FileUploaded()
                | WorkspaceFolder.FileWritten()
                | WorkspaceFolder.FileDeleted()
            ):
                pass  # so have workspace files
            case (
                MemoryNamespace.NamespaceCreated()
                | MemoryNamespace.MemoryRemembered()
                | MemoryNamespace.MemoryUpdated()
                | MemoryNamespace.SourceNoted()
                | MemoryNamespace.MemoryForgotten()
            ):
                pass  # and memories
            case _:
                assert_never(event)

    # -- queries --------------------------------------------------------------

    def workspaces_of(self, user_id: UUID) -> list[WorkspaceInfo]:
        """The user's workspaces with its role: organizations in joining order, then
        workspaces in creation order (as the aggregates list them)."""
        with self.datastore.get_connection() as conn:
            rows = conn.execute(
                "SELECT w.workspace_id, w.name, w.organization_id, w.team_id, m.role "
                "FROM accounts_members m JOIN accounts_workspaces w "
                "ON w.organization_id = m.organization_id "
                "WHERE m.user_id = %s AND m.role IS NOT NULL AND m.joined IS NOT NULL "
                "ORDER BY m.joined, w.version",
                (user_id,),
            ).fetchall()
        return [
            WorkspaceInfo(
                r["workspace_id"], r["name"], r["organization_id"], r["team_id"],
                check_role(r["role"]),
            )
            for r in rows
        ]  # fmt: skip

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

    def teams(self, organization_id: UUID) -> dict[UUID, str]:
        """The organization's teams by id, in creation order."""
        with self.datastore.get_connection() as conn:
            rows = conn.execute(
                "SELECT team_id, name FROM accounts_teams WHERE organization_id = %s "
                "ORDER BY created_at, team_id",
                (organization_id,),
            ).fetchall()
        return {r["team_id"]: r["name"] for r in rows}

    def all_rows(self) -> dict[str, list[dict[str, object]]]:
        """Every table's rows, ordered (for comparing a rebuilt view with the live one)."""
        with self.datastore.get_connection() as conn:
            return {
                table: list(conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall())
                for table in TABLES
            }


class WorkspaceDirectory:
    """The workspaces a user may enter, from the read model when it is current."""

    def __init__(self, view: AccountsView, accounts: AccountService) -> None:
        self.view = view
        self.accounts = accounts

    def workspaces_of(self, user_id: UUID) -> list[WorkspaceInfo]:
        """From the view if it has applied every account write committed so far (the
        caller's own included: read-your-writes), else from the aggregates at once;
        a just-registered user is answered by the write side, not kept waiting."""
        head = self.accounts.recorder.max_notification_id() or 0
        if self.view.position() >= head:
            return self.view.workspaces_of(user_id)
        return self.accounts.workspaces_of(user_id)


def _register(curs: Cursor[DictRow], user_id: UUID, email: str, name: str, event: Event) -> None:
    curs.execute(
        "INSERT INTO accounts_users VALUES (%s, %s, %s, %s)",
        (user_id, email, name, event.timestamp),
    )
    curs.execute(
        "UPDATE accounts_members SET email = %s, name = %s WHERE user_id = %s",
        (email, name, user_id),
    )


def _upsert_member(
    curs: Cursor[DictRow], organization_id: UUID, user_id: UUID, column: str, value: object
) -> None:
    """Set one half of a membership (`role` or `joined`), creating the row if need be."""
    assert column in ("role", "joined")  # a column name, never data
    curs.execute(
        f"INSERT INTO accounts_members (organization_id, user_id, {column}, email, name) "
        "SELECT %s, %s, %s, u.email, u.name FROM (SELECT 1) AS one "
        "LEFT JOIN accounts_users u ON u.user_id = %s "
        f"ON CONFLICT (organization_id, user_id) DO UPDATE SET {column} = EXCLUDED.{column}",
        (organization_id, user_id, value, user_id),
    )
