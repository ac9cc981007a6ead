"""The accounts read model: organizations, teams, workspaces and members.

Fed from the accounts application's log (its own stream), never the sessions' one.
A membership is recorded by two aggregates (the organization grants the role, the
user lists the organization it joined), in either order within one save: a member
row is upserted from both sides and counts once both halves are in.
"""

from __future__ import annotations

from typing import assert_never
from uuid import UUID

from psycopg import Cursor
from psycopg.rows import DictRow
from psycopg.types.json import Jsonb

from application.accounts import AccountService, WorkspaceInfo
from domain.accounts import ACCOUNT_EVENT_CLASSES, AccountEvent, Organization, TokenFamily, User
from domain.api_keys import ApiKey
from domain.budgets import Budget
from domain.invitations import Invitation
from domain.mcp_servers import WorkspaceMcpServers
from domain.memories import MemoryNamespace
from domain.personal_data import ERASED
from domain.roles import Actor
from domain.workspace_files import WorkspaceFolder
from projections.account_queries import AccountQueries, MemberRow
from projections.view import Event, View

__all__ = ["AccountsView", "MemberRow", "WorkspaceDirectory"]

TABLES = (
    "accounts_organizations",
    "accounts_teams",
    "accounts_workspaces",
    "accounts_users",
    "accounts_members",
    "accounts_team_members",
    "accounts_invitations",
    "accounts_api_keys",
)


class AccountsView(AccountQueries, View):
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
        # Added with teams of their own: tables made before get the columns here.
        "ALTER TABLE accounts_workspaces ADD COLUMN IF NOT EXISTS settings jsonb",
        "ALTER TABLE accounts_users ADD COLUMN IF NOT EXISTS avatar_url text",
        # A role in one team (an organization role reaches every team: accounts_members).
        """CREATE TABLE IF NOT EXISTS accounts_team_members (
            team_id uuid NOT NULL,
            user_id uuid NOT NULL,
            organization_id uuid NOT NULL,
            role text NOT NULL,
            joined_at timestamptz NOT NULL,
            PRIMARY KEY (team_id, user_id)
        )""",
        """CREATE INDEX IF NOT EXISTS accounts_team_members_by_user
            ON accounts_team_members (user_id)""",
        """CREATE TABLE IF NOT EXISTS accounts_invitations (
            invitation_id uuid PRIMARY KEY,
            organization_id uuid NOT NULL,
            team_id uuid NOT NULL,
            email text NOT NULL,
            role text NOT NULL,
            invited_by uuid NOT NULL,
            sent_at timestamptz NOT NULL,
            expires_at timestamptz NOT NULL,
            accepted_by uuid,
            accepted_at timestamptz
        )""",
        """CREATE TABLE IF NOT EXISTS accounts_api_keys (
            api_key_id uuid PRIMARY KEY,
            user_id uuid NOT NULL,
            name text NOT NULL,
            prefix text NOT NULL,
            role text NOT NULL,
            workspace_id uuid,
            created_at timestamptz NOT NULL,
            expires_at timestamptz,
            revoked_at timestamptz
        )""",
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
            case (
                Organization.TeamMemberAdded(team_id=team_id, user_id=user_id, role=role)
                | Organization.TeamMemberRoleChanged(team_id=team_id, user_id=user_id, role=role)
            ):
                curs.execute(
                    "INSERT INTO accounts_team_members VALUES (%s, %s, %s, %s, %s) "
                    "ON CONFLICT (team_id, user_id) DO UPDATE SET role = EXCLUDED.role",
                    (team_id, user_id, event.originator_id, role, event.timestamp),
                )
            case Organization.TeamMemberRemoved(team_id=team_id, user_id=user_id):
                curs.execute(
                    "DELETE FROM accounts_team_members WHERE team_id = %s AND user_id = %s",
                    (team_id, user_id),
                )
            case Organization.TeamDeleted(team_id=team_id):
                for table in ("accounts_team_members", "accounts_workspaces", "accounts_teams"):
                    curs.execute(f"DELETE FROM {table} WHERE team_id = %s", (team_id,))
            case Organization.WorkspaceRenamed(workspace_id=wid, name=name):
                curs.execute(
                    "UPDATE accounts_workspaces SET name = %s WHERE workspace_id = %s", (name, wid)
                )
            case Organization.WorkspaceSettingsChanged(workspace_id=wid, settings=settings):
                curs.execute(
                    "UPDATE accounts_workspaces SET settings = %s WHERE workspace_id = %s",
                    (Jsonb(settings), wid),
                )
            case User.ProfileChanged(name=name, avatar_url=avatar_url):
                _profile(curs, event.originator_id, name, avatar_url)
            case User.PasswordChanged() | User.ApiKeyCreated():
                pass  # no password here; keys have rows of their own
            case User.UserErased():
                _erase(curs, event.originator_id)
            case Invitation.InvitationSent():
                curs.execute(
                    "INSERT INTO accounts_invitations VALUES "
                    "(%s, %s, %s, %s, %s, %s, %s, %s, NULL, NULL)",
                    (event.originator_id, event.organization_id, event.team_id, event.email,
                     event.role, event.invited_by, event.timestamp, event.expires_at),
                )  # fmt: skip
            case Invitation.InvitationAccepted(user_id=user_id):
                curs.execute(
                    "UPDATE accounts_invitations SET accepted_by = %s, accepted_at = %s "
                    "WHERE invitation_id = %s",
                    (user_id, event.timestamp, event.originator_id),
                )
            case ApiKey.ApiKeyIssued():
                curs.execute(
                    "INSERT INTO accounts_api_keys VALUES (%s, %s, %s, %s, %s, %s, %s, %s, NULL)",
                    (event.originator_id, event.user_id, event.name, event.prefix, event.role,
                     event.workspace_id, event.timestamp, event.expires_at),
                )  # fmt: skip
            case ApiKey.ApiKeyRevoked():
                curs.execute(
                    "UPDATE accounts_api_keys SET revoked_at = %s WHERE api_key_id = %s",
                    (event.timestamp, event.originator_id),
                )
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
            case (
                WorkspaceMcpServers.Started()
                | WorkspaceMcpServers.Registered()
                | WorkspaceMcpServers.Removed()
                | WorkspaceMcpServers.Resealed()
            ):
                pass  # MCP servers are read from their aggregate
            case _:
                assert_never(event)

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

    def workspaces_of(self, who: UUID | Actor) -> list[WorkspaceInfo]:
        """From the view if it has applied every account write committed so far (the
        caller's own included: read-your-writes), else from the aggregates at once;
        a just-registered user is answered by the write side, not kept waiting."""
        head = self.accounts.recorder.max_notification_id() or 0
        if self.view.position() >= head:
            return self.view.workspaces_of(who)
        return self.accounts.workspaces_of(who)


def _profile(curs: Cursor[DictRow], user_id: UUID, name: str, avatar_url: str | None) -> None:
    curs.execute(
        "UPDATE accounts_users SET name = %s, avatar_url = %s WHERE user_id = %s",
        (name, avatar_url, user_id),
    )
    curs.execute("UPDATE accounts_members SET name = %s WHERE user_id = %s", (name, user_id))


def _erase(curs: Cursor[DictRow], user_id: UUID) -> None:
    """The user's profile and email read as erased; invitations to its email go."""
    curs.execute(
        "DELETE FROM accounts_invitations WHERE accepted_by = %s OR email = "
        "(SELECT email FROM accounts_users WHERE user_id = %s)",
        (user_id, user_id),
    )
    for table in ("accounts_users", "accounts_members"):
        curs.execute(
            f"UPDATE {table} SET email = %s, name = %s WHERE user_id = %s",
            (ERASED, ERASED, user_id),
        )
    curs.execute("UPDATE accounts_users SET avatar_url = NULL WHERE user_id = %s", (user_id,))


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
