"""`TOKENDANCE_LOG_FORMAT=json` on a real `tokendance serve`: every line it writes to
stderr is a JSON object, the run's lines name its session and run, a request's its user,
and no token reaches the log."""

from __future__ import annotations

import uuid
from pathlib import Path

import msgspec
import pytest

from adapters.config.settings import Settings
from tests.e2e.chat_helpers import chat, new_session, user
from tests.e2e.client import Server
from tests.e2e.conftest import UNLIMITED, script_path

pytestmark = [pytest.mark.e2e]


def test_every_line_is_json_and_the_runs_lines_carry_the_session(
    database_url: str, nats_url: str, settings: Settings, data_root: Path, tmp_path: Path
) -> None:
    stderr = tmp_path / "serve.err"
    server = Server(
        database_url,
        nats_url,
        settings.nats_stream,
        data_root / f"json-logs-{uuid.uuid4().hex[:8]}",
        script=script_path("replies"),
        extra_env={**UNLIMITED, "TOKENDANCE_LOG_FORMAT": "json", "TOKENDANCE_LOG_LEVEL": "INFO"},
        stderr=stderr,
    )
    try:
        server.start()
        account, http = user(server.client(), "alice@example.com")
        with http:
            sid = new_session(http, account["workspace_id"])["id"]
            answer = chat(http, sid, "What is a heat pump?")
            assert [e.event for e in answer.events][-1] == "done"
            token = str(account["access_token"])
            # EventSource's way: the token in the query, which the access log quotes.
            http.get(f"/api/v1/sessions/{sid}?access_token={token}")
    finally:
        server.stop()
    assert server.process is not None and server.process.returncode == 0

    lines = stderr.read_text().splitlines()
    assert lines, "serve wrote nothing to stderr"
    entries = []
    for text in lines:
        entry = msgspec.json.decode(text)  # each line, or the test fails naming it
        assert isinstance(entry, dict), text
        assert {"time", "level", "logger", "message"} <= set(entry), text
        entries.append(entry)

    of_run = [e for e in entries if e.get("session_id") == sid and "run_id" in e]
    assert any(e["logger"] == "application.runner" for e in of_run), lines
    assert all(e["user_id"] == account["user_id"] for e in of_run)  # asked by alice
    access = [e for e in entries if e["logger"] == "uvicorn.access"]
    assert any(e.get("user_id") == account["user_id"] for e in access), access
    assert token not in stderr.read_text()
    assert any("access_token=[redacted]" in e["message"] for e in access)
