"""A request that finds every connection of the store's pool in use answers 503
`UNAVAILABLE` with `Retry-After` after one wait for a connection, not after the
recorders' ten (half a minute), and loses nothing: once a connection is free the same
request goes through."""

from __future__ import annotations

import traceback
from typing import Any

import psycopg_pool
import pytest
from eventsourcing.postgres import PostgresFactory
from litestar.testing import TestClient

from adapters.system import System
from tests.e2e.client import ERROR_KEYS, register

pytestmark = pytest.mark.integration


def test_a_request_on_a_busy_pool_answers_503_at_once_and_goes_through_after(
    client: TestClient[Any], system: System
) -> None:
    body = register(client, "ada@example.com")
    auth = {"Authorization": f"Bearer {body['access_token']}"}
    created = client.post(
        "/api/v1/sessions", json={"title": "t", "workspace_id": body["workspace_id"]},
        headers=auth,
    )  # fmt: skip
    assert created.status_code == 201, created.text
    session = f"/api/v1/sessions/{created.json()['id']}"
    factory = system.container.sessions.factory
    assert isinstance(factory, PostgresFactory)
    pool = factory.datastore.pool
    held = [pool.getconn() for _ in range(pool.max_size)]  # every connection, in use
    waits = watch_session_reads(pool)
    try:
        busy = client.patch(session, json={"title": "renamed"}, headers=auth)
    finally:
        for conn in held:
            pool.putconn(conn)
    assert busy.status_code == 503, busy.text
    assert busy.json().keys() == ERROR_KEYS and busy.json()["error_code"] == "UNAVAILABLE"
    assert "every database connection is in use" in busy.json()["detail"]
    assert busy.headers["retry-after"] == "1"
    assert waits == [1], "the session was read with one wait, not the recorders' ten"
    again = client.patch(session, json={"title": "renamed"}, headers=auth)
    assert again.status_code == 200, again.text
    assert client.get(session, headers=auth).json()["title"] == "renamed"


def watch_session_reads(pool: Any) -> list[int]:  # noqa: ANN401 - psycopg's pool
    """How many times a read of a session (`SessionService.get_session`) timed out
    waiting for a connection (the services' own waits, in the background, not counted)."""
    waits = [0]
    getconn = pool.getconn

    def watched(timeout: float | None = None) -> Any:  # noqa: ANN401
        try:
            return getconn(timeout)
        except psycopg_pool.PoolTimeout:
            if any(f.name == "get_session" for f in traceback.extract_stack()):
                waits[0] += 1
            raise

    pool.getconn = watched
    return waits
