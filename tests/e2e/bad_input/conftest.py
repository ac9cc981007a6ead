"""The bad-input suites' world: one server per module (`module_server`), and for each test
a user of its own with a session, and the means to see that nothing moved."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.client import Server, sign_up
from tests.e2e.conftest import module_server

MiB = 1024 * 1024
JSON = {"content-type": "application/json"}


class World:
    """A server with a user, a session and its ids, and the means to see if anything moved."""

    def __init__(self, server: Server, email: str = "bad@example.com") -> None:
        self.server = server
        self.anon = server.client()
        self.account = sign_up(self.anon, email)
        self.http = server.client(str(self.account["access_token"]))
        self.workspace = str(self.account["workspace_id"])
        created = self.http.post("/api/v1/sessions/", json={"workspace_id": self.workspace})
        assert created.status_code == 201, created.text
        self.sid = str(created.json()["id"])

    def snapshot(self) -> tuple[object, ...]:
        """The session's log and the workspace's session list."""
        events = self.http.get(f"/api/v1/sessions/{self.sid}/events", params={"limit": 1000})
        listed = self.http.get("/api/v1/sessions/", params={"workspace_id": self.workspace})
        assert events.status_code == 200 and listed.status_code == 200
        return events.json()["items"], listed.json()["total"]


@pytest.fixture(scope="module")
def server(servers: tuple[str, str], data_root: Path, template_database: str) -> Iterator[Server]:
    """One server for the module: each test signs up a user of its own on it."""
    with module_server(servers, data_root, template_database) as started:
        yield started


@pytest.fixture
def world(server: Server) -> World:
    return World(server, f"bad-{uuid.uuid4().hex[:8]}@example.com")


def names(body: dict[str, object], *fields: str) -> None:
    for field in fields:
        assert field in str(body["detail"]), f"the detail should name {field!r}: {body}"
