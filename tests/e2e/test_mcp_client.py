"""The agent uses MCP servers' tools, through a real `tokendance serve`: a workspace
registers a small MCP server built with the official SDK (`tests/fakes/mcp_calc.py`),
over stdio and over Streamable HTTP; the scripted model calls its tools by their
namespaced names; the results are in the log; a server killed mid-call is a kept
failure and comes back for the next run; bad registrations are clear 400s that never
echo a secret; replay is identical.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator

import httpx
import psutil
import pytest

from tests.e2e.chat_helpers import audit_log, chat, new_session, user
from tests.e2e.client import read_sse, wait_until
from tests.e2e.conftest import StartServer
from tests.e2e.test_thinking import replay

pytestmark = [pytest.mark.e2e]

SECRET = "s3cret-token-value"


def stdio_server(tag: str, **extra: object) -> dict[str, object]:
    command = ["python", "-m", "tests.fakes.mcp_calc", "--tag", tag]
    return {"name": "calc", "transport": "stdio", "command": command,
            "env": {"CALC_TOKEN": SECRET}, **extra}  # fmt: skip


def api_key(http: httpx.Client, workspace: object, role: str) -> str:
    made = http.post("/api/v1/api-keys/", json={"name": role, "role": role,
                                               "workspace_id": workspace})  # fmt: skip
    assert made.status_code == 201, made.text
    return str(made.json()["key"])


def calc_processes(tag: str) -> list[psutil.Process]:
    found = []
    for p in psutil.process_iter(["cmdline"]):
        if tag in " ".join(p.info["cmdline"] or []):
            found.append(p)
    return found


def results(events: list[dict[str, object]]) -> dict[str, dict[str, object]]:
    return {
        str(e["payload"]["tool_use_id"]): e["payload"]  # type: ignore[index]
        for e in events
        if e["type"] == "ToolResultRecorded"
    }


@pytest.fixture
def http_calc() -> Iterator[str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.mcp_calc", "--http", "0"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    port = int(process.stdout.readline().split()[-1])
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        wait_until(lambda: _answers(url), timeout=20)
        yield url
    finally:
        process.kill()
        process.wait()


def _answers(url: str) -> bool:
    try:
        httpx.get(url, timeout=1)
    except Exception:
        return False
    return True


def test_a_stdio_server_s_tools_run_in_the_agent_and_a_killed_one_is_a_kept_failure(
    start_server: StartServer,
) -> None:
    server = start_server("mcp", extra_env={"TOKENDANCE_MCP_TIMEOUT": "60"})
    account, http = user(server.client(), "mcp-stdio@example.org")
    workspace = account["workspace_id"]
    tag = uuid.uuid4().hex
    made = http.post(f"/api/v1/workspaces/{workspace}/mcp-servers", json=stdio_server(tag))
    assert made.status_code == 201, made.text
    body = made.json()
    assert [t["name"] for t in body["tools"]] == ["calc__add", "calc__slow", "calc__fail",
                                                  "calc__whoami"]  # fmt: skip
    assert body["env_names"] == ["CALC_TOKEN"] and SECRET not in made.text
    listed = http.get(f"/api/v1/workspaces/{workspace}/mcp-servers")
    assert listed.status_code == 200 and SECRET not in listed.text
    assert [s["name"] for s in listed.json()] == ["calc"]

    sid = new_session(http, workspace, confirmation="never")["id"]
    killed: list[int] = []

    def kill_during_slow(calls: int = 1) -> None:
        def slow_running() -> bool:
            asked = [e for e in audit_log(http, sid) if e["type"] == "ToolCallRequested"
                     and e["payload"]["tool"] == "calc__slow"]  # type: ignore[index]  # fmt: skip
            return len(asked) >= calls

        wait_until(slow_running, timeout=60, interval=0.2)
        time.sleep(1.0)
        for p in calc_processes(tag):
            killed.append(p.pid)
            p.kill()

    killer = threading.Thread(target=kill_during_slow, daemon=True)
    killer.start()
    read = chat(http, sid, "add, then wait", timeout=90)
    killer.join(timeout=5)
    assert killed, "the MCP server process was found and killed"
    assert read.of("done")[-1].data["status"] == "completed"
    log = audit_log(http, sid)
    changed = [e for e in log if e["type"] == "McpToolsetChanged"]
    assert len(changed) == 1 and [t["tool"] for t in changed[0]["payload"]["tools"]] == [  # type: ignore[index]
        "add", "slow", "fail", "whoami",
    ]  # fmt: skip
    by_call = results(log)
    assert by_call["toolu_add"]["status"] == "success" and by_call["toolu_add"]["summary"] == "5"
    assert by_call["toolu_slow"]["status"] == "error"
    assert "MCP server calc: the server exited during the call" in str(
        by_call["toolu_slow"]["error"]
    )
    assert SECRET not in str(log)
    notices = [e.data for e in read.of("notice") if e.data["kind"] == "mcp_tools"]
    assert notices and "calc__add" in notices[0]["message"]

    # The next run starts the server again; the toolset is unchanged: no new event.
    killer = threading.Thread(target=kill_during_slow, args=(2,), daemon=True)
    killer.start()
    again = chat(http, sid, "once more", timeout=90)
    killer.join(timeout=5)
    assert again.of("done")[-1].data["status"] == "completed"
    log = audit_log(http, sid)
    assert [e["type"] for e in log].count("McpToolsetChanged") == 1
    add_results = [e for e in log if e["type"] == "ToolResultRecorded"
                   and str(e["payload"]["tool_use_id"]).startswith("toolu_add")]  # type: ignore[index]  # fmt: skip
    assert len(add_results) == 2, [(e["type"], e["payload"]) for e in log[-12:]]
    assert add_results[-1]["payload"]["status"] == "success"  # type: ignore[index]
    for p in calc_processes(tag):
        p.kill()

    replayed = replay(server, sid)
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    assert "identically" in replayed.stdout


def test_an_http_server_marked_risky_waits_for_approval_and_bad_registrations_are_400s(
    start_server: StartServer, http_calc: str
) -> None:
    server = start_server("mcp", extra_env={"TOKENDANCE_MCP_TIMEOUT": "3"})
    account, http = user(server.client(), "mcp-http@example.org")
    workspace = account["workspace_id"]
    servers = f"/api/v1/workspaces/{workspace}/mcp-servers"
    made = http.post(servers, json={"name": "calc", "transport": "http", "url": http_calc,
                                    "headers": {"X-Api-Key": SECRET}, "risky": True})  # fmt: skip
    assert made.status_code == 201, made.text
    assert made.json()["header_names"] == ["X-Api-Key"] and SECRET not in made.text
    assert all(t["risky"] for t in made.json()["tools"])

    # Bad input: each a 400 with a clear reason, nothing kept, no secret echoed.
    taken = http.post(servers, json={"name": "calc", "transport": "http", "url": http_calc})
    assert taken.status_code == 400 and taken.json()["error_code"] == "MCP_NAME_TAKEN"
    missing = http.post(servers, json={"name": "nope", "transport": "stdio",
                                       "command": ["no-such-mcp-server-binary"],
                                       "env": {"TOKEN": SECRET}})  # fmt: skip
    assert missing.status_code == 400, missing.text
    assert missing.json()["error_code"] == "MCP_SERVER_UNREACHABLE"
    assert "not found" in missing.json()["detail"] and SECRET not in missing.text
    not_mcp = http.post(servers, json={"name": "web", "transport": "http",
                                       "url": f"{server.url}/health"})  # fmt: skip
    assert not_mcp.status_code == 400, not_mcp.text
    assert not_mcp.json()["error_code"] == "MCP_SERVER_UNREACHABLE"
    bad_name = http.post(servers, json={"name": "Bad__Name", "transport": "http", "url": http_calc})
    assert bad_name.status_code == 400 and bad_name.json()["error_code"] == "MCP_SERVER_INVALID"
    bad_schema = {**stdio_server("bad"), "name": "bad"}
    bad_schema["command"] = [*bad_schema["command"], "--bad-schema"]  # type: ignore[list-item]
    refused = http.post(servers, json=bad_schema)
    assert refused.status_code == 400, refused.text
    assert refused.json()["error_code"] == "MCP_BAD_TOOL_SCHEMA" and "'add'" in refused.text
    assert SECRET not in refused.text
    assert [s["name"] for s in http.get(servers).json()] == ["calc"]

    # Only the workspace's admins change its servers; a stranger does not see it at all.
    for role in ("member", "viewer"):
        key = {"Authorization": f"Bearer {api_key(http, workspace, role)}"}
        assert http.post(servers, json=stdio_server("x"), headers=key).status_code == 403
        assert http.delete(f"{servers}/calc", headers=key).status_code == 403
        seen = http.get(servers, headers=key)
        assert seen.status_code == 200 and SECRET not in seen.text
    _, stranger = user(server.client(), "stranger@example.org")
    assert stranger.get(servers).status_code == 404
    assert stranger.post(servers, json=stdio_server("x")).status_code == 404

    sid = new_session(http, workspace, confirmation="risky")["id"]
    asked = read_sse(http, "POST", f"/api/v1/chat/{sid}/message", json={"content": "add"},
                     until=lambda e: e.event == "confirm_required", timeout=60)  # fmt: skip
    question = asked.of("confirm_required")[0].data
    assert question["tool"] == "calc__add" or "calc__add" in str(question)
    answered = http.post(f"/api/v1/hitl/{question['action_id']}/confirm", json={"approved": True})
    assert answered.status_code == 200, answered.text

    def result_of(call: str) -> dict[str, object] | None:
        return results(audit_log(http, sid)).get(call)

    added = wait_until(lambda: result_of("toolu_add"), timeout=60)
    assert isinstance(added, dict) and added["status"] == "success" and added["summary"] == "5"
    # The slow call is risky too: rejected, it is kept as cancelled and the run goes on.
    slow = wait_until(
        lambda: next((e for e in audit_log(http, sid) if e["type"] == "ConfirmationRequested"
                      and e["payload"]["tool_use_id"] == "toolu_slow"), None),  # type: ignore[index]
        timeout=60,
    )  # fmt: skip
    assert isinstance(slow, dict)
    rejected = http.post(f"/api/v1/hitl/{slow['payload']['action_id']}/confirm",
                         json={"approved": False})  # fmt: skip
    assert rejected.status_code == 200, rejected.text
    wait_until(lambda: http.get(f"/api/v1/sessions/{sid}").json()["status"] == "completed",
               timeout=60)  # fmt: skip
    assert http.delete(f"{servers}/calc").status_code == 204
    assert http.get(servers).json() == []
    assert http.delete(f"{servers}/calc").status_code == 404
