"""Row-level security on the read models: the API reads a tenant's rows and no others.

The API's read-model queries connect as their own login role (`tokendance_api` unless
`TOKENDANCE_API_DATABASE_URL` names another), without SUPERUSER or BYPASSRLS, granted
SELECT on the tables below and nothing else. Every connection it checks out carries its
caller's organizations (`tokendance.organization_ids`) and user (`tokendance.user_id`)
(`adapters.postgres.scoped_datastore`); with neither set, every policy answers no row.
So a query that forgets its `WHERE` returns nothing, never another tenant's rows.

The projections, the relay, the workers, rebuilds and the CLI connect as the tables'
owner. `ENABLE` (not `FORCE`) ROW LEVEL SECURITY leaves the owner outside the policies,
so the writers need no policy of their own and cannot be starved by one; a superuser
(embedded pgserver's `postgres`) bypasses them as well.

Decisions per table (`TENANT_TABLES`: the table and the organization test of a row):

- organization_id column, kept by the projection: accounts_organizations,
  accounts_teams, accounts_workspaces, accounts_members, accounts_team_members,
  accounts_invitations, usage_sessions, usage_calls, usage_daily, usage_org_daily.
- organization_id, or no organization and the caller's own user scope: budgets,
  budget_alerts, memory_namespaces, memories (a user's personal budget or memories).
- a user (no organization column): accounts_users and accounts_api_keys, by the user's
  membership (organization or team) of one of the caller's organizations.
- a workspace (through accounts_workspaces): workspace_files, workspace_folders.
- a session: sessions_view, artifacts_view, artifacts_sessions, episodes,
  episode_sessions, working_memory_view, working_memory_progress, confirmations_view.
  A session is in an organization if the usage read model says so (`usage_sessions`,
  written from the same session log in the same transaction as the session's own rows,
  so a just-started session is never hidden) or its workspace is (the accounts read
  model, for a session whose start named no organization).
- through the row it belongs to: artifact_versions (its artifact), memory_vectors (its
  memory), episode_vectors (its episode), usage_monthly (its scope: the organization,
  a team or workspace of it, or the caller's own user).

`SHARED_TABLES` the API reads too, holding no tenant's rows; `OWNER_TABLES` it is granted
nothing on (tests/integration/test_row_security.py checks that every table in the
database is in exactly one of the three lists).
"""

from __future__ import annotations

import hashlib

from eventsourcing.postgres import PostgresDatastore
from psycopg import Cursor, sql
from psycopg.rows import DictRow

API_ROLE = "tokendance_api"
ORGANIZATIONS = "tokendance.organization_ids"  # comma-separated UUIDs
USER = "tokendance.user_id"
POLICY = "tokendance_tenant"
ORGS = "tokendance_caller_organizations()"
ME = "tokendance_caller_user()"

FUNCTIONS = (
    f"""CREATE OR REPLACE FUNCTION {ORGS} RETURNS uuid[] LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT coalesce(string_to_array(
        nullif(current_setting('{ORGANIZATIONS}', true), ''), ',')::uuid[], '{{}}') $$""",
    f"""CREATE OR REPLACE FUNCTION {ME} RETURNS uuid LANGUAGE sql STABLE PARALLEL SAFE
    AS $$ SELECT nullif(current_setting('{USER}', true), '')::uuid $$""",
)


def _in_org(column: str = "organization_id") -> str:
    return f"{column} = ANY ({ORGS})"


def _workspace(column: str = "workspace_id") -> str:
    return (
        f"{column} IN (SELECT w.workspace_id FROM accounts_workspaces w "
        f"WHERE {_in_org('w.organization_id')})"
    )


def _session(column: str = "session_id") -> str:
    return (
        f"({column} IN (SELECT u.session_id FROM usage_sessions u "
        f"WHERE {_in_org('u.organization_id')}) OR {column} IN (SELECT v.session_id "
        f"FROM sessions_view v WHERE {_workspace('v.workspace_id')}))"
    )


def _session_or_workspace(session: str = "session_id", workspace: str = "workspace_id") -> str:
    return (
        f"({session} IN (SELECT u.session_id FROM usage_sessions u "
        f"WHERE {_in_org('u.organization_id')}) OR {_workspace(workspace)})"
    )


def _user(column: str = "user_id") -> str:
    return (
        f"({column} IN (SELECT m.user_id FROM accounts_members m WHERE "
        f"{_in_org('m.organization_id')}) OR {column} IN (SELECT t.user_id FROM "
        f"accounts_team_members t WHERE {_in_org('t.organization_id')}))"
    )


def _org_or_mine(scope: str) -> str:
    """An organization's row, or one with no organization in the caller's user scope."""
    return f"({_in_org()} OR (organization_id IS NULL AND {scope} = 'user' AND scope_id = {ME}))"


_USAGE_SCOPE = (
    f"((scope = 'org' AND {_in_org('scope_id')}) "
    f"OR (scope = 'team' AND scope_id IN (SELECT t.team_id FROM accounts_teams t "
    f"WHERE {_in_org('t.organization_id')})) "
    f"OR (scope = 'workspace' AND {_workspace('scope_id')}) "
    f"OR (scope = 'user' AND scope_id = {ME}))"
)

# table -> the condition a row must meet to be one of the caller's organizations'
TENANT_TABLES: dict[str, str] = {
    "accounts_organizations": _in_org(),
    "accounts_teams": _in_org(),
    "accounts_workspaces": _in_org(),
    "accounts_members": _in_org(),
    "accounts_team_members": _in_org(),
    "accounts_invitations": _in_org(),
    "accounts_users": _user(),
    "accounts_api_keys": _user(),
    "usage_sessions": _in_org(),
    "usage_calls": _in_org(),
    "usage_daily": _in_org(),
    "usage_org_daily": _in_org(),
    "usage_monthly": _USAGE_SCOPE,
    "budgets": _org_or_mine("scope"),
    "budget_alerts": _org_or_mine("scope"),
    "memory_namespaces": _org_or_mine("kind"),
    "memories": _org_or_mine("kind"),
    "memory_vectors": (
        f"memory_id IN (SELECT x.memory_id FROM memories x WHERE {_in_org('x.organization_id')} "
        f"OR (x.organization_id IS NULL AND x.kind = 'user' AND x.scope_id = {ME}))"
    ),
    "sessions_view": _session_or_workspace(),
    "working_memory_view": _session(),
    "working_memory_progress": _session(),
    "confirmations_view": _session(),
    "artifacts_sessions": _session_or_workspace(),
    "artifacts_view": _session_or_workspace(),
    "artifact_versions": (
        "artifact_id IN (SELECT a.artifact_id FROM artifacts_view a WHERE "
        f"{_session_or_workspace('a.session_id', 'a.workspace_id')})"
    ),
    "workspace_files": _workspace(),
    "workspace_folders": _workspace(),
    "episode_sessions": _session_or_workspace(),
    "episodes": _session_or_workspace(),
    "episode_vectors": (
        "item_id IN (SELECT e.item_id FROM episodes e WHERE "
        f"{_session_or_workspace('e.session_id', 'e.workspace_id')})"
    ),
}

# Tables the API role reads that hold no tenant's rows, and why.
SHARED_TABLES: dict[str, str] = {
    "projection_tracking": "each read model's position (read-your-writes waits on it)",
    "embedding_models": "which embedding models exist and which one is ready",
    "vector_graphs": "which vector indexes were asked for (names, groups, models)",
}

# Tables the API role is granted nothing on, and why (the owner's connections use them).
OWNER_TABLES: dict[str, str] = {
    "tokendance_events": "the sessions' event store: read through the owner's store",
    "tokendance_snapshots": "the sessions' snapshots: the owner's store",
    "accounts_events": "the accounts' event store: the owner's store",
    "accounts_snapshots": "the accounts' snapshots: the owner's store",
    "tokendance_context_snapshots": "the engine's prompt snapshots (workers only)",
    "tokendance_context_segments": "the conversation parts of those snapshots (workers only)",
    "tokendance_user_keys": "the users' wrapped content keys (key management only)",
    "alert_outbox": "budget alerts waiting for the webhook (the delivering worker only)",
    "embedding_cache": "embeddings by text hash, shared by the projections' writers",
    "idempotency_keys": "the API's own idempotency leases, keyed by the caller's user",
    "api_key_uses": "use counts the API writes, keyed by the key",
    "session_uploads": "which blobs a session may cite, written by the upload command",
    "rate_limit_windows": "rate-limit counters by caller key",
    "rate_limit_streams": "open stream counters by caller key",
    "login_failures": "failed logins by account, read before anyone is authenticated",
}


def _digest(condition: str) -> str:
    return hashlib.sha256(condition.encode()).hexdigest()[:16]


def apply_row_security(
    datastore: PostgresDatastore, role: str = API_ROLE, password: str = ""
) -> None:
    """Create the API role if it is missing, grant it what it reads, and put the
    policies on every tenant table that exists (idempotent: what is in place is left
    alone, so a replica's start takes no table lock once the first one did this).

    Runs as the tables' owner, under the schema lock (`adapters.bootstrap`)."""
    with datastore.transaction(commit=True) as curs:
        ensure_role(curs, role, password)
        for statement in FUNCTIONS:
            curs.execute(statement)
        curs.execute("SELECT current_database() AS name")
        database = curs.fetchone()
        assert database is not None
        curs.execute(
            sql.SQL("GRANT CONNECT ON DATABASE {} TO {}").format(
                sql.Identifier(database["name"]), sql.Identifier(role)
            )
        )
        curs.execute(sql.SQL("GRANT USAGE ON SCHEMA public TO {}").format(sql.Identifier(role)))
        for table in (*TENANT_TABLES, *SHARED_TABLES):
            curs.execute(
                "SELECT to_regclass(%s) IS NOT NULL AS found, "
                "coalesce(has_table_privilege(%s, to_regclass(%s), 'SELECT'), false) AS granted",
                (table, role, table),
            )
            row = curs.fetchone()
            if row is None or not row["found"]:
                continue  # made by a process of another kind: its start applies this again
            if not row["granted"]:
                curs.execute(
                    sql.SQL("GRANT SELECT ON {} TO {}").format(
                        sql.Identifier(table), sql.Identifier(role)
                    )
                )
            if table in TENANT_TABLES:
                _protect(curs, table, TENANT_TABLES[table], role)


def ensure_role(curs: Cursor[DictRow], role: str, password: str = "") -> None:
    """The login role, made if missing (roles are the cluster's: another database's set-up
    may be making it at the same moment; that one's wins)."""
    curs.execute(
        "SELECT rolsuper OR rolbypassrls AS unsafe FROM pg_roles WHERE rolname = %s", (role,)
    )
    found = curs.fetchone()
    if found is None:
        secret = sql.SQL(" PASSWORD {}").format(sql.Literal(password)) if password else sql.SQL("")
        curs.execute(
            sql.SQL(
                "DO $$ BEGIN CREATE ROLE {} LOGIN NOSUPERUSER NOBYPASSRLS NOCREATEDB "
                "NOCREATEROLE{}; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; "
                "END $$"
            ).format(sql.Identifier(role), secret)
        )
    elif found["unsafe"]:
        raise SystemExit(
            f"TOKENDANCE_API_DATABASE_URL: role {role!r} is a superuser or bypasses row-level "
            "security; the API's reads need a role without SUPERUSER and BYPASSRLS"
        )


def _protect(curs: Cursor[DictRow], table: str, condition: str, role: str) -> None:
    """ENABLE row-level security on `table` and (re)make its policy if it differs."""
    digest = _digest(f"{role}:{condition}")
    curs.execute(
        "SELECT c.relrowsecurity AS enabled, obj_description(p.oid, 'pg_policy') AS digest "
        "FROM pg_class c LEFT JOIN pg_policy p ON p.polrelid = c.oid AND p.polname = %s "
        "WHERE c.oid = to_regclass(%s)",
        (POLICY, table),
    )
    row = curs.fetchone()
    assert row is not None
    name, ident = sql.Identifier(POLICY), sql.Identifier(table)
    if not row["enabled"]:
        curs.execute(sql.SQL("ALTER TABLE {} ENABLE ROW LEVEL SECURITY").format(ident))
    if row["digest"] == digest:
        return
    curs.execute(sql.SQL("DROP POLICY IF EXISTS {} ON {}").format(name, ident))
    curs.execute(
        sql.SQL("CREATE POLICY {} ON {} AS PERMISSIVE FOR SELECT TO {} USING ({})").format(
            name,
            ident,
            sql.Identifier(role),
            sql.SQL(condition),
        )
    )
    curs.execute(
        sql.SQL("COMMENT ON POLICY {} ON {} IS {}").format(name, ident, sql.Literal(digest))
    )
