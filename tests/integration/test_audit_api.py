"""`GET /sessions/{id}/audit` and the hashes on `GET /sessions/{id}/events`, in process on
real Postgres: a clean log, a changed byte, a deleted row, 404 for an unknown or another
tenant's session."""

from __future__ import annotations

from uuid import UUID, uuid4

import pytest
from litestar.testing import TestClient

from adapters.system import System
from tests.integration.test_artifacts_api import sign_up
from tests.integration.test_hash_chain import rows, sql

pytestmark = pytest.mark.integration

Client = TestClient  # type: ignore[type-arg]


def test_the_audit_endpoint_and_the_events_route_show_the_chain(
    system: System, client: Client, database_url: str
) -> None:
    alice, workspace = sign_up(client, "alice@example.com")
    made = client.post("/api/v1/sessions/", json={"workspace_id": workspace}, headers=alice)
    assert made.status_code == 201, made.text
    sid = UUID(made.json()["id"])
    for i in range(3):
        system.container.sessions.append_user_message(sid, f"m{i}")
    stored = rows(database_url, "tokendance_events", sid)

    events = client.get(f"/api/v1/sessions/{sid}/events", headers=alice)
    assert events.status_code == 200, events.text
    items = events.json()["items"]
    assert [(i["prev_hash"], i["hash"]) for i in items] == [
        ((p or b"").hex(), (h or b"").hex()) for _, _, _, p, h in stored
    ]
    assert items[0]["prev_hash"] == "00" * 32
    page = client.get(f"/api/v1/sessions/{sid}/events", params={"after": 2}, headers=alice)
    assert [i["hash"] for i in page.json()["items"]] == [items[2]["hash"], items[3]["hash"]]

    clean = client.get(f"/api/v1/sessions/{sid}/audit", headers=alice)
    assert clean.status_code == 200, clean.text
    assert clean.json() == {"verified": True, "events": 4, "head_hash": items[-1]["hash"]}

    sql(
        database_url,
        "UPDATE tokendance_events SET state = overlay(state placing 'Y'::bytea from 5 for 1) "
        "WHERE originator_id = %s AND originator_version = 3",
        sid,
    )
    bad = client.get(f"/api/v1/sessions/{sid}/audit", headers=alice).json()
    assert bad["verified"] is False and bad["first_bad_version"] == 3 and bad["reason"]
    sql(
        database_url,
        "DELETE FROM tokendance_events WHERE originator_id = %s AND originator_version = 2",
        sid,
    )
    gap = client.get(f"/api/v1/sessions/{sid}/audit", headers=alice).json()
    assert gap["first_bad_version"] == 2 and "missing" in gap["reason"]


def test_auditing_an_unknown_or_anothers_session_is_a_404(system: System, client: Client) -> None:
    alice, workspace = sign_up(client, "alice@example.com")
    bob, _ = sign_up(client, "bob@example.com")
    made = client.post("/api/v1/sessions/", json={"workspace_id": workspace}, headers=alice)
    sid = made.json()["id"]
    for who, session in ((alice, uuid4()), (bob, sid)):
        answer = client.get(f"/api/v1/sessions/{session}/audit", headers=who)
        assert answer.status_code == 404, answer.text
        body = answer.json()
        assert set(body) >= {"detail", "error_code", "timestamp"}
    assert client.get(f"/api/v1/sessions/{sid}/audit").status_code == 401
