"""SIGTERM with SSE clients connected: `serve` ends their streams and exits cleanly.

Five clients follow five sessions (one of them with a run in flight); on SIGTERM the
server ends every stream cleanly (not cut after the grace period), exits 0 well within
a generous deadline and prints no traceback. After a restart each client resumes from
its last id and gets every later stored event once, in order (the run in flight is
resumed from the log and ends).
"""

from __future__ import annotations

import signal
import subprocess
import uuid
from pathlib import Path

import httpx
import pytest

from adapters.config.settings import Settings
from tests.e2e.client import Server, is_event, read_sse, sign_up
from tests.e2e.conftest import UNLIMITED, script_path
from tests.e2e.follower import Follower

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

GRACE = 10  # the default grace period, set explicitly
DONE = is_event("done", "error")


def test_sigterm_ends_open_streams_and_clients_resume_after_a_restart(
    database_url: str, nats_url: str, settings: Settings, data_root: Path
) -> None:
    data_dir = data_root / f"shutdown-{uuid.uuid4().hex[:6]}"
    servers: list[Server] = []

    def start(script: str, n: int) -> Server:
        env = {**UNLIMITED, "TOKENDANCE_SHUTDOWN_GRACE": str(GRACE)}
        stderr = data_dir.parent / f"{data_dir.name}-serve-{n}.err"
        server = Server(
            database_url, nats_url, settings.nats_stream, data_dir,
            script=script_path(script), extra_env=env, stderr=stderr,
        )  # fmt: skip
        servers.append(server)
        return server.start()

    try:
        first = start("restart_before", 1)
        account = sign_up(first.client(), "shutdown@example.com")
        token = str(account["access_token"])
        http = first.client(token)
        sids = [new_session(http, account["workspace_id"]) for _ in range(5)]
        followers = [follow(first, token, sid) for sid in sids]
        for f in followers:
            f.wait_for_ids(1)
        busy = read_sse(
            http, "POST", f"/api/v1/chat/{sids[0]}/message", json={"content": "go"}, stored=4
        )  # the run goes on after this client has gone
        assert busy.status == 200 and not busy.of("done")
        for sid in sids[1:]:
            rename(http, sid, "before the stop")
        for f in followers:
            f.wait_for_ids(2 if f is not followers[0] else 4)
        assert not followers[0].of("done"), "the run must still be going at SIGTERM"

        assert first.process is not None
        first.process.send_signal(signal.SIGTERM)
        try:
            first.process.wait(GRACE + 15)
        except subprocess.TimeoutExpired:
            pytest.fail(f"serve did not exit within {GRACE + 15}s of SIGTERM")
        assert first.process.returncode == 0
        errors = first.stderr.read_text() if first.stderr else ""
        assert "Traceback" not in errors, errors
        assert "graceful shutdown exceeded" not in errors, "streams were cut, not ended"
        for f in followers:
            f.finish()  # each stream was ended cleanly by the server

        second = start("restart_after", 2)
        http = second.client(token)
        for sid in sids[1:]:
            rename(http, sid, "after the restart")
        for sid, f in zip(sids, followers, strict=True):
            check_resume(http, sid, f.ids, run=sid == sids[0])
    finally:
        for server in reversed(servers):
            server.stop()


def check_resume(http: httpx.Client, sid: str, seen: list[int], *, run: bool) -> None:
    """From the last id seen: every later stored event once, in order, up to the log's end."""
    assert seen == list(range(1, len(seen) + 1)), seen
    headers = {"Last-Event-ID": str(seen[-1])}
    url = f"/api/v1/sessions/{sid}/stream"
    if run:  # the run resumed after the restart: until it ends
        rest = read_sse(http, "GET", url, headers=headers, until=DONE, timeout=30)
        assert rest.events[-1].event == "done", rest.events[-1]
    final = log_versions(http, sid)[-1]
    if not run:
        rest = read_sse(http, "GET", url, headers=headers, stored=final - seen[-1])
    assert rest.ids == list(range(seen[-1] + 1, final + 1)), (seen, rest.ids)


def follow(server: Server, token: str, sid: str) -> Follower:
    follower = Follower(server.url, token, "GET", f"/api/v1/sessions/{sid}/stream")
    follower.start()
    return follower


def new_session(http: httpx.Client, workspace_id: object) -> str:
    created = http.post("/api/v1/sessions/", json={"workspace_id": str(workspace_id)})
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


def rename(http: httpx.Client, sid: str, title: str) -> None:
    renamed = http.patch(f"/api/v1/sessions/{sid}", json={"title": title})
    assert renamed.status_code == 200, renamed.text


def log_versions(http: httpx.Client, sid: str) -> list[int]:
    page = http.get(f"/api/v1/sessions/{sid}/events", params={"limit": 1000})
    assert page.status_code == 200, page.text
    return [i["version"] for i in page.json()["items"]]
