"""What a new user trips on: foreign attachments, listing without a workspace, archived
sessions, and access tokens in the access log."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from tests.e2e.client import E2E_JWT_SECRET, assert_error, free_port, sign_up, wait_until
from tests.e2e.conftest import StartServer

pytestmark = [pytest.mark.e2e]


def new_session(http: httpx.Client, workspace: object, title: str = "s") -> str:
    created = http.post("/api/v1/sessions", json={"workspace_id": str(workspace), "title": title})
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


def test_attachments_lists_and_archived(start_server: StartServer) -> None:
    server = start_server("replies")
    account = sign_up(server.client(), "new@example.com")
    with server.client(str(account["access_token"])) as http:
        home = account["workspace_id"]
        other_ws = http.post("/api/v1/workspaces", json={"name": "second"})
        assert other_ws.status_code == 201, other_ws.text
        first, second = new_session(http, home, "one"), new_session(http, other_ws.json()["id"])

        # An attachment must be an upload of this very session.
        upload = http.post(
            f"/api/v1/sessions/{first}/attachments", files={"file": ("a.txt", b"notes")}
        )
        ref = upload.json()["blob_ref"]
        for sid, refs in ((second, [ref]), (first, [ref, "sha256:" + "0" * 64])):
            refused = http.post(
                f"/api/v1/chat/{sid}/message", json={"content": "read", "attachments": refs}
            )
            assert_error(refused, 404, "ATTACHMENT_NOT_FOUND")
        events = http.get(f"/api/v1/sessions/{second}/events").json()["items"]
        assert [e["type"] for e in events] == ["SessionStarted"]  # nothing was written
        with http.stream(
            "POST", f"/api/v1/chat/{first}/message", json={"content": "read", "attachments": [ref]}
        ) as accepted:
            assert accepted.status_code == 200

        # Without workspace_id: the caller's sessions in all of their workspaces.
        def listed() -> object:
            page = http.get("/api/v1/sessions").json()
            return page if page["total"] == 2 else None

        page = wait_until(listed)
        assert isinstance(page, dict)
        assert {s["id"] for s in page["items"]} == {first, second}
        stranger = sign_up(server.client(), "stranger@example.com")
        with server.client(str(stranger["access_token"])) as theirs:
            assert theirs.get("/api/v1/sessions").json()["total"] == 0

        # Archived shows on the session itself (it leaves the lists).
        assert http.get(f"/api/v1/sessions/{second}").json()["archived"] is False
        assert http.delete(f"/api/v1/sessions/{second}").status_code == 204
        assert http.get(f"/api/v1/sessions/{second}").json()["archived"] is True
        wait_until(lambda: http.get("/api/v1/sessions").json()["total"] == 1)


def test_an_access_token_in_the_query_never_reaches_the_access_log(
    database_url: str, nats_url: str, data_root: Path, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOKENDANCE_", "ANTHROPIC_"))}
    env.update(
        TOKENDANCE_DATABASE_URL=database_url, TOKENDANCE_NATS_URL=nats_url,
        TOKENDANCE_NATS_STREAM=f"LOG{os.getpid()}", TOKENDANCE_DATA_DIR=str(data_root / "log"),
        TOKENDANCE_JWT_SECRET=E2E_JWT_SECRET, TOKENDANCE_LOG_LEVEL="INFO",
    )  # fmt: skip
    port, log = free_port(), tmp_path / "serve.log"
    with log.open("wb") as out:
        serve = subprocess.Popen(
            [sys.executable, "-m", "adapters.cli", "serve", "--port", str(port)],
            env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            url = f"http://127.0.0.1:{port}"
            wait_until(lambda: _answers(f"{url}/health"), timeout=60, interval=0.2)
            secret = "eyJhbGciOiJIUzI1NiJ9.secret-part.signature"
            got = httpx.get(f"{url}/api/v1/sessions?access_token={secret}&limit=5", timeout=10)
            assert got.status_code in (200, 401)
            wait_until(lambda: "/api/v1/sessions?" in log.read_text(), timeout=10)
        finally:
            serve.terminate()
            serve.wait(30)
    text = log.read_text()
    assert "secret-part" not in text
    assert "access_token=[redacted]&limit=5" in text


def _answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=1).status_code == 200
    except httpx.HTTPError:
        time.sleep(0.1)
        return False
