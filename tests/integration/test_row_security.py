"""Row-level security on the read models (DESIGN 8.19): as the API role, a query sees
its caller's organizations' rows only, and nothing at all without a caller.

Two users, each in an organization of their own, fill every tenant table through the
API and the session commands (sessions, a model call's usage, a plan, an approval, an
artifact, a finding, a team, an invitation, an API key, a budget and its alert, a
memory, a file). Then, connected as the API role the app logs in with, for every table
that `adapters.postgres.row_security` protects: no setting reads zero rows; the other
organization set reads none of the first one's; its own reads its own. Every table in
the database is protected, shared or the owner's alone, each with its reason, so a new
table that nobody classified fails here. Through the HTTP API, each user still sees
exactly their own sessions, usage and memories.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from decimal import Decimal
from uuid import UUID

import psycopg
import pytest
from litestar.testing import TestClient
from psycopg.rows import dict_row

import adapters.http.middleware.auth as auth_module
from adapters.http.reads.tenant_reads import tenant_reads
from adapters.postgres.row_security import (
    ORGANIZATIONS,
    OWNER_TABLES,
    SHARED_TABLES,
    TENANT_TABLES,
    USER,
)
from adapters.postgres.scoped_datastore import SET_CALLER, Caller, api_login
from adapters.system import System
from application.tools.create_doc import MARKDOWN
from domain.budgets import Spend
from domain.conversation import Usage
from domain.values import PlanItem
from tests.integration.test_usage_view import SONNET, call
from tests.waiting import eventually

pytestmark = pytest.mark.integration

Client = TestClient  # type: ignore[type-arg]
PASSWORD = "correct horse battery"


def sign_up(client: Client, email: str) -> tuple[dict[str, str], dict[str, str]]:
    made = client.post(
        "/api/v1/auth/register", json={"email": email, "password": PASSWORD, "name": "n"}
    )
    assert made.status_code == 201, made.text
    login = client.post("/api/v1/auth/login", json={"email": email, "password": PASSWORD})
    assert login.status_code == 200, login.text
    return {"Authorization": f"Bearer {login.json()['access_token']}"}, made.json()


def fill(system: System, client: Client, email: str) -> tuple[dict[str, str], Caller, UUID]:
    """Rows of one organization in every tenant table: (auth headers, the caller its
    user is, session)."""
    auth, me = sign_up(client, email)
    org, workspace = UUID(me["organization_id"]), me["workspace_id"]
    made = client.post("/api/v1/sessions/", json={"workspace_id": workspace, "title": "t"},
                       headers=auth)  # fmt: skip
    assert made.status_code == 201, made.text
    sid = UUID(made.json()["id"])
    app = system.container.sessions
    call(system.container, sid, SONNET, Usage(1000, 100, 0, 0))
    app.update_plan(sid, [PlanItem("look", "in_progress")])
    app.request_tool_call(sid, "tu1", "write_file", {"path": "x"}, "risky")
    app.request_confirmation(sid, f"a-{sid}", "tu1", "write_file", {"path": "x"}, "write x")
    app.record_finding(sid, f"a finding of {email}", [])
    data = b"# report\n"
    blob = asyncio.run(system.engine.blobs.put(data))
    app.record_artifact(sid, "report", "r.md", blob, size=len(data), sha256=blob,
                        media_type=MARKDOWN)  # fmt: skip
    team = client.post("/api/v1/teams/", json={"name": "t"}, headers=auth)
    assert team.status_code == 201, team.text
    invited = client.post(f"/api/v1/teams/{team.json()['id']}/members",
                          json={"email": f"new-{email}"}, headers=auth)  # fmt: skip
    assert invited.status_code == 202, invited.text
    key = client.post("/api/v1/api-keys/", json={"name": "k"}, headers=auth)
    assert key.status_code == 201, key.text
    budget = client.put(f"/api/v1/budgets/org/{org}", json={"monthly_usd": 1}, headers=auth)
    assert budget.is_success, budget.text
    period = datetime.now(UTC).strftime("%Y-%m")
    assert system.container.accounts.record_crossings("org", org, period, Spend(Decimal(2)), sid)
    remembered = {"text": f"{email} likes tea", "category": "preference"}
    memory = client.post("/api/v1/memories", json=remembered, headers=auth)
    assert memory.status_code == 201, memory.text
    file = client.post(f"/api/v1/workspaces/{workspace}/files",
                       files={"file": ("a.txt", b"hello", "text/plain")}, headers=auth)  # fmt: skip
    assert file.status_code == 201, file.text
    return auth, Caller((org,), UUID(me["user_id"])), sid


def caught_up(system: System) -> None:
    c = system.container
    for name, view in c.views.items():
        head = c.log_of(name).recorder.max_notification_id() or 0
        assert view.wait_for(head, 30.0), name


def as_api(system: System, who: Caller | None) -> dict[str, set[str]]:
    """Each tenant table's rows (as JSON) read as the API role, with `who` set (no
    setting at all when None)."""
    login = api_login(system.container.database_url, system.settings.api_database_url)
    rows: dict[str, set[str]] = {}
    with psycopg.connect(login.url, autocommit=True, row_factory=dict_row) as conn:
        assert conn.execute("SELECT current_user AS me").fetchone() == {"me": login.role}
        if who is not None:
            conn.execute(SET_CALLER, settings(who))
        for table in TENANT_TABLES:
            found = conn.execute(f"SELECT to_jsonb(t)::text AS r FROM {table} t").fetchall()
            rows[table] = {r["r"] for r in found}
    return rows


def settings(who: Caller) -> tuple[str, str, str, str]:
    orgs = ",".join(map(str, who.organization_ids))
    return ORGANIZATIONS, orgs, USER, str(who.user_id or "")


def owner_rows(system: System, table: str, who: Caller) -> int:
    """How many of `table`'s rows are `who`'s, read as the owner (who bypasses the
    policies) through the policy's own condition, with the setting naming `who`."""
    with psycopg.connect(system.container.database_url, autocommit=True) as conn:
        conn.execute(SET_CALLER, settings(who))
        row = conn.execute(f"SELECT count(*) FROM {table} WHERE {TENANT_TABLES[table]}").fetchone()
    return int(row[0]) if row else 0


def as_owner(system: System) -> dict[str, int]:
    with psycopg.connect(system.container.database_url, autocommit=True) as conn:
        counts = {t: conn.execute(f"SELECT count(*) FROM {t}").fetchone() for t in TENANT_TABLES}
    return {t: int(row[0]) if row else 0 for t, row in counts.items()}


def test_the_api_role_sees_its_callers_organizations_rows_and_nothing_else(
    system: System, client: Client
) -> None:
    alice, org_a, sid_a = fill(system, client, "alice@example.com")
    bob, org_b, sid_b = fill(system, client, "bob@example.com")
    caught_up(system)
    total = as_owner(system)
    for table in TENANT_TABLES:  # rows of both organizations exist in every table
        assert owner_rows(system, table, org_a) > 0, table
        assert owner_rows(system, table, org_b) > 0, table

    nothing: dict[str, set[str]] = {t: set() for t in TENANT_TABLES}
    assert as_api(system, None) == nothing  # no setting: no row of any table
    assert as_api(system, Caller(())) == nothing  # set, but to no organization: none
    seen = {org_a: as_api(system, org_a), org_b: as_api(system, org_b)}
    for who in (org_a, org_b):  # its own rows, all of them
        assert {t: len(r) for t, r in seen[who].items()} == {
            t: owner_rows(system, t, who) for t in TENANT_TABLES
        }
    for table in TENANT_TABLES:  # the other's set: not one row of the first one's
        assert seen[org_a][table] and seen[org_b][table], table
        assert not seen[org_a][table] & seen[org_b][table], table
        assert len(seen[org_a][table]) + len(seen[org_b][table]) == total[table], table

    # Through the API: each sees exactly their own sessions, usage and memories.
    for auth, sid, other in ((alice, sid_a, sid_b), (bob, sid_b, sid_a)):
        listed = client.get("/api/v1/sessions/", headers=auth)
        assert listed.status_code == 200, listed.text
        assert [s["id"] for s in listed.json()["items"]] == [str(sid)]
        assert client.get(f"/api/v1/sessions/{other}", headers=auth).status_code == 404
        usage = client.get("/api/v1/usage", headers=auth)
        assert usage.status_code == 200, usage.text
        assert str(other) not in usage.text
        memories = client.get("/api/v1/memories", headers=auth)
        assert memories.status_code == 200, memories.text
        texts = [m["text"] for m in memories.json()["items"]]
        assert len(texts) == 1 and ("alice" in texts[0]) == (auth is alice)


def test_every_table_is_protected_shared_or_the_owners_alone(
    system: System, client: Client
) -> None:
    client.get("/health")  # the app has started: its own tables exist too
    login = api_login(system.container.database_url, system.settings.api_database_url)
    again = tenant_reads(system.container)  # a second start on the same database
    again.prepare(system.container)
    again.close()
    with psycopg.connect(system.container.database_url, autocommit=True) as conn:
        tables = {
            r[0]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
            ).fetchall()
        }
        classes = (set(TENANT_TABLES), set(SHARED_TABLES), set(OWNER_TABLES))
        assert not (classes[0] & classes[1] or classes[0] & classes[2] or classes[1] & classes[2])
        assert tables - set().union(*classes) == set(), "classify these tables in row_security"
        for table in tables:
            flags = conn.execute(
                "SELECT relrowsecurity, has_table_privilege(%s, oid, 'SELECT'), "
                "has_table_privilege(%s, oid, 'INSERT, UPDATE, DELETE, TRUNCATE') "
                "FROM pg_class WHERE oid = to_regclass(%s)",
                (login.role, login.role, table),
            ).fetchone()
            assert flags is not None
            secured, readable, writable = flags
            assert not writable, table
            assert readable == (table in TENANT_TABLES or table in SHARED_TABLES), table
            assert secured == (table in TENANT_TABLES), table
        role = conn.execute(
            "SELECT rolsuper, rolbypassrls, rolcanlogin FROM pg_roles WHERE rolname = %s",
            (login.role,),
        ).fetchone()
        assert role == (False, False, True)


def test_a_caller_in_no_organization_sees_nothing_and_gets_no_error(
    system: System, client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    auth, _, sid = fill(system, client, "carol@example.com")
    caught_up(system)
    # As if the caller belonged to no organization any more (resolved so at login).
    monkeypatch.setattr(auth_module, "caller_of", lambda _, p: Caller((), p.user_id))
    listed = client.get("/api/v1/sessions/", headers=auth)
    assert listed.status_code == 200, listed.text
    assert listed.json()["items"] == []
    usage = client.get("/api/v1/usage", headers=auth)
    assert usage.status_code == 200, usage.text
    assert str(sid) not in usage.text
    monkeypatch.undo()
    assert [s["id"] for s in client.get("/api/v1/sessions/", headers=auth).json()["items"]] == [
        str(sid)
    ]


def test_the_api_roles_connections_closed_by_the_server_are_replaced_not_answered_503(
    system: System, client: Client
) -> None:
    """As after a Postgres restart: every pooled connection of the API role is gone, and
    the next read still answers, on a new connection (not a 503 for each old one)."""
    auth, _, sid = fill(system, client, "dave@example.com")
    caught_up(system)
    reads = tenant_reads(system.container)
    try:
        with reads.datastore.get_connection():
            pass  # the pool opens and makes its connections
        pool = reads.datastore.pool
        eventually(lambda: pool.get_stats()["pool_available"] >= pool.min_size)
        role = api_login(system.container.database_url, system.settings.api_database_url).role
        with psycopg.connect(system.container.database_url, autocommit=True) as conn:
            ended = conn.execute(
                "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE usename = %s AND datname = current_database()",
                (role,),
            ).fetchone()
        assert ended is not None and ended[0] >= pool.min_size >= 2, ended
        with reads.datastore.get_connection() as conn:
            assert conn.execute("SELECT current_setting(%s) AS o", (ORGANIZATIONS,)).fetchone()
    finally:
        reads.close()
    for _ in range(3):  # and through the API, whose own pool lost its connections too
        listed = client.get("/api/v1/sessions/", headers=auth)
        assert listed.status_code == 200, listed.text
        assert [s["id"] for s in listed.json()["items"]] == [str(sid)]
