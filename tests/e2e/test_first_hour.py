"""A new user's first chat against a real `tokendance serve` (issue 35 item 7): the
server says at start which model it uses and how to set a real one, a chat without one
fails saying the same, and the bundled scripted model's answer raises no `citation`
notice about its own links."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.chat_helpers import chat, new_session, user
from tests.e2e.conftest import StartServer

pytestmark = [pytest.mark.e2e]


def test_without_a_model_serve_says_so_at_start_and_the_chat_says_how_to_get_one(
    start_server: StartServer, tmp_path: Path
) -> None:
    log = tmp_path / "serve.log"
    server = start_server(None, stderr=log)
    said = [ln for ln in log.read_text().splitlines() if "model: none" in ln]  # said first
    assert len(said) == 1 and "TOKENDANCE_LLM=scripted:demo" in said[0], said
    assert "ANTHROPIC_API_KEY" in said[0] and "LLM_NOT_CONFIGURED" in said[0]

    account, http = user(server.client(), "first@example.com")
    read = chat(http, new_session(http, account["workspace_id"])["id"], "hello", timeout=15)
    (error,) = read.of("error")
    assert error.data["error_code"] == "LLM_NOT_CONFIGURED"
    assert "TOKENDANCE_LLM=scripted:demo" in str(error.data["message"])


def test_on_the_bundled_model_serve_names_it_and_its_answer_raises_no_notice(
    start_server: StartServer, tmp_path: Path
) -> None:
    log = tmp_path / "serve.log"
    server = start_server(None, stderr=log, extra_env={"TOKENDANCE_LLM": "scripted:demo"})
    said = [ln for ln in log.read_text().splitlines() if "model: the scripted model" in ln]
    assert "unset TOKENDANCE_LLM" in said[0] and "ANTHROPIC_API_KEY" in said[0], said

    account, http = user(server.client(), "second@example.com")
    read = chat(http, new_session(http, account["workspace_id"])["id"], "heat pumps?", timeout=60)
    assert read.events[-1].event == "done", [(e.event, e.data) for e in read.events]
    assert [e.data for e in read.of("notice")] == []
