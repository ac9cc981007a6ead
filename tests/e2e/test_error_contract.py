"""The error contract a client relies on (issue 31, item 7): every validation failure is
400 `VALIDATION_ERROR` whose detail names the field in backticks, the same way for a
path, a query and a body; a body that is not JSON says where; every body over its limit
is 413 naming the limit. Each bad input leaves everything as it was.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from tests.e2e.client import Server, assert_error, sign_up
from tests.e2e.conftest import module_server

pytestmark = [pytest.mark.e2e]

JSON = {"content-type": "application/json"}
MiB = 1024 * 1024
BODY_LIMIT = 2 * MiB  # adapters/http/app.py MAX_BODY


class World:
    """A user with a session, and the means to see that nothing moved."""

    def __init__(self, server: Server, email: str) -> None:
        self.server = server
        self.anon = server.client()
        account = sign_up(self.anon, email)
        self.http = server.client(str(account["access_token"]))
        self.workspace = str(account["workspace_id"])
        created = self.http.post("/api/v1/sessions/", json={"workspace_id": self.workspace})
        assert created.status_code == 201, created.text
        self.sid = str(created.json()["id"])
        teams = self.http.get("/api/v1/teams/")
        assert teams.status_code == 200, teams.text
        self.team = str(teams.json()["items"][0]["id"])

    def snapshot(self) -> tuple[object, ...]:
        """The session's log, the sessions listed, the memories and workspace files kept."""
        events = self.http.get(f"/api/v1/sessions/{self.sid}/events", params={"limit": 1000})
        listed = self.http.get("/api/v1/sessions/", params={"workspace_id": self.workspace})
        memories = self.http.get("/api/v1/memories/")
        files = self.http.get(f"/api/v1/workspaces/{self.workspace}/files/")
        for answer in (events, listed, memories, files):
            assert answer.status_code == 200, answer.text
        return events.json()["items"], listed.json()["total"], memories.json(), files.json()


@pytest.fixture(scope="module")
def server(servers: tuple[str, str], data_root: Path, template_database: str) -> Iterator[Server]:
    """One server for the module: each test signs up a user of its own on it."""
    extra_env = {"TOKENDANCE_MAX_UPLOAD_BYTES": str(MiB)}
    with module_server(servers, data_root, template_database, extra_env=extra_env) as started:
        yield started


@pytest.fixture
def world(server: Server) -> World:
    return World(server, f"contract-{uuid.uuid4().hex[:8]}@example.com")


def field_error(response: object, field: str) -> str:
    """The 400 VALIDATION_ERROR's detail, which names `field` in backticks."""
    error = assert_error(response, 400, "VALIDATION_ERROR")  # type: ignore[arg-type]
    detail = str(error["detail"])
    assert f"`{field}`" in detail, f"the detail should name `{field}`: {error}"
    return detail


def test_a_body_that_is_not_json_says_so_and_where(world: World) -> None:
    w = world
    before = w.snapshot()
    targets = [
        ("POST", "/api/v1/sessions/"),
        ("PATCH", f"/api/v1/sessions/{w.sid}"),
        ("POST", f"/api/v1/chat/{w.sid}/message"),
        ("POST", "/api/v1/memories/"),
        ("POST", "/api/v1/teams/"),
    ]
    not_json = {
        b"{nope": "byte 1",
        b'{"title": "x"': "truncated",
        b"{": "truncated",
        b'{"a": 1,}': "byte 8",
        b"\xef\xbb\xbf{}": "byte 0",
    }
    for method, url in targets:
        for body, where in not_json.items():
            error = assert_error(
                w.http.request(method, url, content=body, headers=JSON), 400, "VALIDATION_ERROR"
            )
            detail = str(error["detail"])
            assert detail.startswith("the body is not valid JSON: "), (url, body, error)
            assert where in detail, (url, body, error)
        # Invalid UTF-8 in a string (msgspec raised UnicodeDecodeError: a 500), or
        # outside one: a 400 saying where.
        for body, words in [
            (b'{"title": "\xff"}', "it is not UTF-8 text (byte 11)"),
            (b'{"a":"\xc3"}', "it is not UTF-8 text (byte 6)"),
            (b"\xff\xfe", "invalid character (byte 0)"),
        ]:
            error = assert_error(
                w.http.request(method, url, content=body, headers=JSON), 400, "VALIDATION_ERROR"
            )
            assert error["detail"] == f"the body is not valid JSON: {words}", (url, body, error)
    assert w.snapshot() == before
    assert w.http.get(f"/api/v1/sessions/{w.sid}").status_code == 200


def test_an_empty_body_where_one_is_needed_is_named(world: World) -> None:
    w = world
    before = w.snapshot()
    for method, url in [
        ("POST", "/api/v1/sessions/"),
        ("POST", f"/api/v1/sessions/{w.sid}/fork"),
        ("POST", f"/api/v1/chat/{w.sid}/message"),
        ("POST", "/api/v1/memories/"),
        ("POST", "/api/v1/memories/search"),
        ("POST", "/api/v1/workspaces/"),
    ]:
        for headers in (JSON, {}):
            response = w.http.request(method, url, content=b"", headers=headers)
            error = assert_error(response, 400, "VALIDATION_ERROR")
            assert "body is empty" in str(error["detail"]), (url, error)
    assert w.snapshot() == before


def test_memory_and_search_mistakes_are_400_naming_the_field(world: World) -> None:
    w = world
    before = w.snapshot()
    past = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    fine = {"text": "the lab's door code is 0815", "category": "knowledge"}
    remember = [
        ({**fine, "category": "opinion"}, "category"),
        ({**fine, "text": "  "}, "text"),
        ({**fine, "text": "x" * 4001}, "text"),
        ({**fine, "namespace": "planet:mars"}, "namespace"),
        ({**fine, "namespace": "user:not-an-id"}, "namespace"),
        ({**fine, "expires_at": past}, "expires_at"),
        ({**fine, "expires_at": "2099-01-01T00:00:00"}, "expires_at"),
        ({**fine, "source_document": "a\x00b"}, "source_document"),
        ({**fine, "text": 5}, "text"),
        ({"text": "x"}, "category"),
    ]
    for body, field in remember:
        field_error(w.http.post("/api/v1/memories/", json=body), field)
    for body, field in [
        ({"query": "x", "k": 0}, "k"),
        ({"query": "x", "k": 101}, "k"),
        ({"query": " "}, "query"),
        ({"query": "x", "category": "opinion"}, "category"),
        ({"query": "x", "namespace": "team:"}, "namespace"),
    ]:
        field_error(w.http.post("/api/v1/memories/search", json=body), field)
    for params, field in [
        ({"category": "opinion"}, "category"),
        ({"namespace": "nowhere"}, "namespace"),
        ({"limit": "0"}, "limit"),
    ]:
        field_error(w.http.get("/api/v1/memories/", params=params), field)
    for params, field in [
        ({}, "q"),
        ({"q": " "}, "q"),
        ({"q": "x", "k": "0"}, "k"),
        ({"q": "x", "k": "101"}, "k"),
        ({"q": "x", "k": "many"}, "k"),
        ({"q": "x", "from": "yesterday"}, "from"),
        ({"q": "x", "to": "2026-13-01"}, "to"),
        ({"q": "x", "from": "2026-02-01", "to": "2026-01-01"}, "from"),
        ({"q": "x", "workspace_id": "nope"}, "workspace_id"),
    ]:
        field_error(w.http.get("/api/v1/search/", params=params), field)
    assert w.snapshot() == before


def test_a_bad_id_answers_alike_in_a_path_a_query_and_a_body(world: World) -> None:
    w = world
    before = w.snapshot()
    in_body = field_error(
        w.http.post(
            "/api/v1/mcp/tools/note_progress/execute", json={"session_id": "nope", "args": {}}
        ),
        "session_id",
    )
    in_path = field_error(w.http.get("/api/v1/sessions/nope"), "session_id")
    assert in_path == in_body
    workspace_in_body = field_error(
        w.http.post("/api/v1/sessions/", json={"workspace_id": "nope"}), "workspace_id"
    )
    workspace_in_query = field_error(
        w.http.get("/api/v1/sessions/", params={"workspace_id": "nope"}), "workspace_id"
    )
    workspace_in_path = field_error(w.http.get("/api/v1/workspaces/nope/files/"), "workspace_id")
    assert workspace_in_body == workspace_in_query == workspace_in_path
    for bad in ("nope", "123", "00000000-0000-0000-0000-00000000000g"):
        for method, url, field in [
            ("GET", f"/api/v1/sessions/{bad}", "session_id"),
            ("PATCH", f"/api/v1/sessions/{bad}", "session_id"),
            ("DELETE", f"/api/v1/sessions/{bad}", "session_id"),
            ("GET", f"/api/v1/sessions/{bad}/events", "session_id"),
            ("GET", f"/api/v1/sessions/{bad}/artifacts", "session_id"),
            ("POST", f"/api/v1/sessions/{bad}/fork", "session_id"),
            ("POST", f"/api/v1/chat/{bad}/message", "session_id"),
            ("GET", f"/api/v1/artifacts/{bad}", "artifact_id"),
            ("GET", f"/api/v1/artifacts/{bad}/download", "artifact_id"),
            ("GET", f"/api/v1/teams/{bad}", "team_id"),
            ("GET", f"/api/v1/teams/{bad}/members", "team_id"),
            ("PATCH", f"/api/v1/teams/{w.team}/members/{bad}", "user_id"),
            ("GET", f"/api/v1/workspaces/{bad}/files/", "workspace_id"),
            ("GET", f"/api/v1/workspaces/{w.workspace}/files/{bad}", "file_id"),
            ("DELETE", f"/api/v1/workspaces/{w.workspace}/files/{bad}", "file_id"),
            ("GET", f"/api/v1/memories/{bad}", "memory_id"),
            ("DELETE", f"/api/v1/api-keys/{bad}", "api_key_id"),
        ]:
            body = {"content": "x"} if method in ("POST", "PATCH") else None
            field_error(w.http.request(method, url, json=body), field)
    # A well-formed id of nothing is still a 404, and a path no route has too.
    assert_error(w.http.get(f"/api/v1/sessions/{uuid.uuid4()}"), 404, "NOT_FOUND")
    assert_error(w.http.get(f"/api/v1/teams/{uuid.uuid4()}"), 404)
    assert_error(w.http.get("/api/v1/no-such-thing/nope"), 404, "NOT_FOUND")
    assert_error(w.http.get(f"/api/v1/sessions/{w.sid}/nope/more"), 404, "NOT_FOUND")
    assert w.snapshot() == before


def test_query_parameter_violations_name_the_parameter(world: World) -> None:
    w, sid = world, world.sid
    before = w.snapshot()
    for url, params, field in [
        ("/api/v1/sessions/", {"limit": 0}, "limit"),
        ("/api/v1/sessions/", {"limit": "ten"}, "limit"),
        ("/api/v1/sessions/", {"status": "sleeping"}, "status"),
        (f"/api/v1/sessions/{sid}/events", {"limit": 1001}, "limit"),
        (f"/api/v1/sessions/{sid}/events", {"after": "first"}, "after"),
        (f"/api/v1/sessions/{sid}/artifacts", {"limit": 0}, "limit"),
        (f"/api/v1/sessions/{sid}", {"messages_limit": 0}, "messages_limit"),
        (f"/api/v1/sessions/{sid}", {"messages_limit": 10_001}, "messages_limit"),
        ("/api/v1/memories/", {"limit": 201}, "limit"),
    ]:
        field_error(w.http.get(url, params=params), field)
    field_error(
        w.http.post(
            "/api/v1/sessions/",
            json={"workspace_id": w.workspace, "settings": {"max_iterations": 0}},
        ),
        "settings.max_iterations",
    )
    assert w.snapshot() == before


def _example(name: str, world: World) -> str:
    """A value for a path parameter that parses (an id of the world where there is one)."""
    known = {"session_id": world.sid, "workspace_id": world.workspace, "team_id": world.team}
    if name in known:
        return known[name]
    if name.endswith("_id"):
        return str(uuid.uuid4())
    return "x" if name != "page" else "1"


def test_every_body_over_its_limit_is_a_413_naming_the_limit(world: World) -> None:
    w = world
    before = w.snapshot()
    document = w.anon.get("/schema/openapi.json")
    assert document.status_code == 200, document.text
    checked = []
    for path, operations in document.json()["paths"].items():
        for method, operation in operations.items():
            body = operation.get("requestBody") if isinstance(operation, dict) else None
            if not body:
                continue
            url = re.sub(r"\{(\w+)\}", lambda m: _example(m.group(1), w), path)
            multipart = "multipart/form-data" in body.get("content", {})
            headers = {"content-type": "multipart/form-data; boundary=x"} if multipart else JSON
            # Over the route's limit (a session attachment may have 10 MiB, a file 1 MiB here).
            oversize = b"x" * (11 * MiB) if multipart else b"{" + b" " * BODY_LIMIT
            response = w.http.request(method.upper(), url, content=oversize, headers=headers)
            error = assert_error(response, 413, "PAYLOAD_TOO_LARGE")
            detail = str(error["detail"])
            assert re.search(r"at most [\d,]+ bytes", detail), (method, path, error)
            if not multipart:
                assert f"{BODY_LIMIT:,}" in detail, (method, path, error)
            checked.append((method, path))
    assert len(checked) >= 20, checked  # every route with a body, the uploads among them
    assert any("attachments" in p for _, p in checked) and any("files" in p for _, p in checked)
    assert w.snapshot() == before
    assert w.http.get(f"/api/v1/sessions/{w.sid}").status_code == 200
