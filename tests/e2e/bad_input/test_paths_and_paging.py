"""Bad input gets a clear 4xx with `{detail, error_code, timestamp}`; nothing half-written
(DESIGN 8.9). Ids in paths and queries, paging parameters and cursors.
"""

from __future__ import annotations

import uuid

import pytest

from tests.e2e.bad_input.conftest import World, names
from tests.e2e.client import assert_error

pytestmark = [pytest.mark.e2e]


def test_bad_ids_in_paths_and_queries(world: World) -> None:
    w = world
    before = w.snapshot()
    for bad in ("not-a-uuid", "123", "00000000-0000-0000-0000-00000000000g", "%20"):
        for method, url in [
            ("GET", f"/api/v1/sessions/{bad}"),
            ("PATCH", f"/api/v1/sessions/{bad}"),
            ("DELETE", f"/api/v1/sessions/{bad}"),
            ("GET", f"/api/v1/sessions/{bad}/events"),
            ("GET", f"/api/v1/sessions/{bad}/stream"),
            ("GET", f"/api/v1/sessions/{bad}/messages"),
            ("POST", f"/api/v1/sessions/{bad}/fork"),
            ("POST", f"/api/v1/chat/{bad}/message"),
            ("POST", f"/api/v1/chat/{bad}/stop"),
            ("GET", f"/api/v1/chat/{bad}/working-memory"),
        ]:
            body = {"content": "x"} if method in ("POST", "PATCH") else None
            response = w.http.request(method, url, json=body, timeout=10)
            assert_error(response, (400, 404))
    # Well-formed ids of nothing: 404.
    ghost = uuid.uuid4()
    assert_error(w.http.get(f"/api/v1/sessions/{ghost}"), 404, "NOT_FOUND")
    assert_error(w.http.get(f"/api/v1/sessions/{ghost}/events"), 404, "NOT_FOUND")
    assert_error(
        w.http.get("/api/v1/sessions/", params={"workspace_id": str(ghost)}), 404, "NOT_FOUND"
    )
    # Bad ids in the query.
    for bad in ("nope", "1", ""):
        error = assert_error(
            w.http.get("/api/v1/sessions/", params={"workspace_id": bad}), 400, "VALIDATION_ERROR"
        )
        names(error, "workspace_id")
    # No workspace_id at all is no error: the caller's sessions in all of their workspaces.
    mine = w.http.get("/api/v1/sessions/")
    assert mine.status_code == 200 and w.sid in {s["id"] for s in mine.json()["items"]}, mine.text
    assert w.snapshot() == before


def test_paging_parameters_out_of_range(world: World) -> None:
    w, sid, ws = world, world.sid, world.workspace
    before = w.snapshot()
    cases: list[tuple[str, dict[str, object], str]] = [
        ("/api/v1/sessions/", {"workspace_id": ws, "limit": 0}, "limit"),
        ("/api/v1/sessions/", {"workspace_id": ws, "limit": 101}, "limit"),
        ("/api/v1/sessions/", {"workspace_id": ws, "limit": -5}, "limit"),
        ("/api/v1/sessions/", {"workspace_id": ws, "limit": "ten"}, "limit"),
        ("/api/v1/sessions/", {"workspace_id": ws, "limit": 10**30}, "limit"),
        ("/api/v1/sessions/", {"workspace_id": ws, "cursor": "x"}, "cursor"),
        ("/api/v1/sessions/", {"workspace_id": ws, "cursor": "x" * 501}, "cursor"),
        ("/api/v1/sessions/", {"workspace_id": ws, "status": "sleeping"}, "status"),
        (
            f"/api/v1/sessions/{sid}",
            {"include_details": "true", "messages_limit": 0},
            "messages_limit",
        ),
        (
            f"/api/v1/sessions/{sid}",
            {"include_details": "true", "messages_limit": 10_001},
            "messages_limit",
        ),
        (f"/api/v1/sessions/{sid}/messages", {"cursor": "x"}, "cursor"),
        ("/api/v1/artifacts", {"cursor": "x"}, "cursor"),
        ("/api/v1/artifacts", {"type": "movie"}, "type"),
        (f"/api/v1/sessions/{sid}/messages", {"limit": 0}, "limit"),
        (f"/api/v1/sessions/{sid}/messages", {"limit": 1001}, "limit"),
        (f"/api/v1/sessions/{sid}/events", {"limit": 0}, "limit"),
        (f"/api/v1/sessions/{sid}/events", {"limit": 1001}, "limit"),
        (f"/api/v1/sessions/{sid}/events", {"after": -1}, "after"),
        (f"/api/v1/sessions/{sid}/events", {"after": "first"}, "after"),
        (f"/api/v1/sessions/{sid}/events", {"type": "x" * 101}, "type"),
    ]
    for url, params, field in cases:
        error = assert_error(w.http.get(url, params=params), 400, "VALIDATION_ERROR")
        assert field in str(error["detail"]) or (
            field == "type" and "event_type" in str(error["detail"])
        ), error
    assert w.snapshot() == before


def test_cursors_not_given_out_and_huge_positions_are_refused_not_a_server_error(
    world: World,
) -> None:
    """A cursor is only ever one a list gave out: made-up, edited or another list's
    cursors are a 400 naming `cursor`; huge `after` versions never reach Postgres."""
    w = world
    issued = w.http.get("/api/v1/sessions/", params={"workspace_id": w.workspace, "limit": 1})
    assert issued.status_code == 200, issued.text
    events = w.http.get(f"/api/v1/sessions/{w.sid}/events", params={"limit": 1}).json()
    other_list = str(events["next_cursor"])
    body, _, mac = other_list.partition(".")
    edited = body[:-1] + ("A" if body[-1] != "A" else "B") + "." + mac
    for cursor in ("not-a-cursor", "e30.AAAA", other_list, edited, "." * 10):
        response = w.http.get(
            "/api/v1/sessions/", params={"workspace_id": w.workspace, "cursor": cursor}
        )
        names(assert_error(response, 400, "VALIDATION_ERROR"), "cursor")
    for after in (2**62, 2**63, 10**30):
        response = w.http.get(f"/api/v1/sessions/{w.sid}/events", params={"after": after})
        assert response.status_code < 500, (after, response.text)
