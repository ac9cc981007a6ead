"""The hash chain through a real `tokendance serve`: a chat's events carry their hashes,
the audit endpoint verifies them and names a changed one; events stored without hashes
are chained when the server starts again (the backfill)."""

from __future__ import annotations

import psycopg
import pytest

from tests.e2e.client import assert_error, sign_up
from tests.e2e.conftest import StartServer

pytestmark = [pytest.mark.e2e]


def test_the_chain_through_the_server_and_its_backfill_at_start(
    start_server: StartServer, database_url: str
) -> None:
    server = start_server(None)
    account = sign_up(server.client(), "chain@example.com")
    http = server.client(str(account["access_token"]))
    made = http.post("/api/v1/sessions/", json={"workspace_id": str(account["workspace_id"])})
    assert made.status_code == 201, made.text
    sid = made.json()["id"]
    assert http.patch(f"/api/v1/sessions/{sid}", json={"title": "renamed"}).status_code == 200

    events = http.get(f"/api/v1/sessions/{sid}/events").json()["items"]
    assert len(events) == 2 and events[0]["prev_hash"] == "00" * 32
    assert events[1]["prev_hash"] == events[0]["hash"] and len(events[1]["hash"]) == 64
    clean = http.get(f"/api/v1/sessions/{sid}/audit")
    assert clean.json() == {"verified": True, "events": 2, "head_hash": events[1]["hash"]}
    assert_error(http.get("/api/v1/sessions/00000000-0000-4000-8000-000000000000/audit"), 404)

    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(
            "UPDATE tokendance_events SET state = overlay(state placing 'Q'::bytea from 2 for 1)"
            " WHERE originator_id = %s AND originator_version = 2",
            (sid,),
        )
    bad = http.get(f"/api/v1/sessions/{sid}/audit").json()
    assert bad["verified"] is False and bad["first_bad_version"] == 2

    # Events stored before the chain existed: the next start chains them.
    kept = http.post("/api/v1/sessions/", json={"workspace_id": str(account["workspace_id"])})
    assert kept.status_code == 201, kept.text
    server.stop()
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("DELETE FROM tokendance_events WHERE originator_id = %s", (sid,))
        conn.execute("UPDATE tokendance_events SET prev_hash = NULL, hash = NULL")
        conn.execute("UPDATE accounts_events SET prev_hash = NULL, hash = NULL")
    server = start_server(None)
    http = server.client(str(account["access_token"]))
    again = http.post("/api/v1/sessions/", json={"workspace_id": str(account["workspace_id"])})
    assert again.status_code == 201, again.text
    with psycopg.connect(database_url) as conn:
        unhashed = conn.execute(
            "SELECT (SELECT count(*) FROM tokendance_events WHERE hash IS NULL)"
            " + (SELECT count(*) FROM accounts_events WHERE hash IS NULL)"
        ).fetchone()
    assert unhashed == (0,)
    for session in (kept.json()["id"], again.json()["id"]):
        audit = http.get(f"/api/v1/sessions/{session}/audit").json()
        assert audit["verified"] is True, audit
