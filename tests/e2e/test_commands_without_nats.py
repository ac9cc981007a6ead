"""With NATS stopped, session commands all succeed and none waits on a read model.

Commands answer from the session they wrote (the write side); only queries wait for a
read model, and the server counts those waits (`tokendance_read_model_waits_total` on
/metrics). Fifty concurrent commands on a server whose NATS is down must leave that
count where it was.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from adapters.config.settings import Settings
from adapters.processes.embedded import EmbeddedNats
from tests.e2e.client import Server, is_event, read_sse, sign_up, wait_until
from tests.e2e.conftest import UNLIMITED, script_path

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

Command = Callable[[httpx.Client], tuple[int, str]]


def read_model_waits(http: httpx.Client) -> int:
    text = http.get("/metrics").text
    found = re.search(r"^tokendance_read_model_waits_total (\S+)$", text, re.MULTILINE)
    assert found, "no read-model wait counter on /metrics"
    return int(float(found.group(1)))


def create(workspace_id: object) -> Command:
    def run(http: httpx.Client) -> tuple[int, str]:
        r = http.post("/api/v1/sessions/", json={"workspace_id": workspace_id, "title": "new"})
        return r.status_code, r.json().get("status", r.text)

    return run


def rename(sid: str) -> Command:
    def run(http: httpx.Client) -> tuple[int, str]:
        r = http.patch(f"/api/v1/sessions/{sid}", json={"title": f"renamed {sid[:4]}"})
        return r.status_code, r.json().get("title", r.text)

    return run


def complete(sid: str) -> Command:
    def run(http: httpx.Client) -> tuple[int, str]:
        r = http.post(f"/api/v1/sessions/{sid}/complete")
        return r.status_code, r.json().get("status", r.text)

    return run


def fork(sid: str) -> Command:
    def run(http: httpx.Client) -> tuple[int, str]:
        r = http.post(f"/api/v1/sessions/{sid}/fork", json={"at_version": 1})
        return r.status_code, r.json().get("status", r.text)

    return run


def send(sid: str) -> Command:
    def run(http: httpx.Client) -> tuple[int, str]:
        read = read_sse(
            http, "POST", f"/api/v1/chat/{sid}/message", json={"content": "hi"},
            until=is_event("done", "error"), timeout=60,
        )  # fmt: skip
        return read.status, read.events[-1].event if read.events else read.body.decode()

    return run


def test_fifty_concurrent_commands_succeed_without_nats_and_none_waits_on_a_read_model(
    database_url: str, settings: Settings, data_root: Path
) -> None:
    nats = EmbeddedNats(data_root / f"nats-{uuid.uuid4().hex[:8]}")
    server = Server(
        database_url, nats.start(), settings.nats_stream, data_root / f"e2e-{uuid.uuid4().hex[:6]}",
        script=script_path("replies"), extra_env=UNLIMITED,
    )  # fmt: skip
    try:
        server.start()
        account = sign_up(server.client(), "nonats@example.com")
        token = str(account["access_token"])
        http = server.client(token)
        workspace = account["workspace_id"]
        sids = [_new_session(http, workspace) for _ in range(30)]
        nats.stop()
        wait_until(lambda: http.get("/readiness").json()["checks"]["nats"] != "ok", timeout=20)
        waits = read_model_waits(http)

        commands = [create(workspace) for _ in range(20)]
        commands += [rename(s) for s in sids[:10]] + [send(s) for s in sids[10:20]]
        commands += [complete(s) for s in sids[20:25]] + [fork(s) for s in sids[25:30]]
        assert len(commands) == 50
        with ThreadPoolExecutor(len(commands)) as pool:
            results = list(pool.map(lambda command: command(server.client(token)), commands))

        assert all(status in (200, 201) for status, _ in results), results
        assert [r for _, r in results[:20]] == ["created"] * 20
        assert [r for _, r in results[20:30]] == [f"renamed {s[:4]}" for s in sids[:10]]
        assert [r for _, r in results[30:40]] == ["done"] * 10
        assert [r for _, r in results[40:45]] == ["completed"] * 5
        assert read_model_waits(http) == waits, "a command waited on a read model"
        # The counter counts: a query that must see its session's version does wait
        # (and, the view being behind without NATS, answers from the log).
        got = http.get(f"/api/v1/sessions/{sids[0]}")
        assert got.status_code == 200 and got.json()["title"] == f"renamed {sids[0][:4]}"
        assert read_model_waits(http) == waits + 1
    finally:
        server.stop()
        nats.stop()


def _new_session(http: httpx.Client, workspace: object) -> str:
    r = http.post("/api/v1/sessions/", json={"workspace_id": workspace, "title": "prepared"})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])
