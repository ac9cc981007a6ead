"""TokenDance as an MCP server: the official `mcp` SDK's client connects to `/mcp` of a
real `tokendance serve` with an API key, lists the tools, runs `send_message` to the
scripted model's final answer with progress notifications, reads the session's
working memory and artifacts, and gets 401 without a key or with a bad one.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.e2e.chat_helpers import audit_log, user
from tests.e2e.client import Server
from tests.e2e.conftest import StartServer

pytestmark = [pytest.mark.e2e]

TOOLS = {"start_session", "send_message", "get_working_memory", "list_artifacts",
         "search_memories", "run_agent_tool"}  # fmt: skip


def api_key(http: httpx.Client, workspace: object, role: str = "member") -> str:
    made = http.post("/api/v1/api-keys/", json={"name": "mcp", "role": role,
                                               "workspace_id": workspace})  # fmt: skip
    assert made.status_code == 201, made.text
    return str(made.json()["key"])


def connect(server: Server, key: str) -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60)
    return Client(streamable_http_client(f"{server.url}/mcp", http_client=http))


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content
    data = result.structured_content
    assert isinstance(data, dict), result
    return data.get("result", data)  # type: ignore[no-any-return]


def test_an_mcp_client_delegates_a_task_and_reads_what_it_made(start_server: StartServer) -> None:
    server = start_server("chat")
    account, http = user(server.client(), "mcp-server@example.org")
    key = api_key(http, account["workspace_id"])
    progress: list[tuple[float, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, message))

    async def session() -> dict[str, Any]:
        async with connect(server, key) as client:
            listed = {t.name for t in (await client.list_tools()).tools}
            assert listed >= TOOLS, listed
            sent = await client.call_tool(
                "send_message", {"message": "Tell me about heat pumps"},
                progress_callback=on_progress,
            )  # fmt: skip
            answer = structured(sent)
            sid = answer["session_id"]
            memory = structured(await client.call_tool("get_working_memory", {"session_id": sid}))
            artifacts = structured(await client.call_tool("list_artifacts", {"session_id": sid}))
            nobody = {"session_id": "00000000-0000-0000-0000-000000000000"}
            foreign = await client.call_tool("get_working_memory", nobody)
            assert foreign.is_error and "NOT_FOUND" in str(foreign.content)
            templates = (await client.list_resource_templates()).resource_templates
            assert [t.uri_template for t in templates] == [
                "tokendance://sessions/{session_id}/artifacts/{artifact_id}"
            ]
            return {"answer": answer, "memory": memory, "artifacts": artifacts}

    got = asyncio.run(session())
    answer = got["answer"]
    assert answer["status"] == "completed"
    assert (
        answer["answer"] == "Heat pumps deliver about three units of heat per unit of electricity."
    )
    assert progress and any("update_plan" in (m or "") for _, m in progress)
    assert "Find heat pump facts" in str(got["memory"]["task_plan"])
    assert "items" in got["artifacts"]
    kinds = [e["type"] for e in audit_log(http, answer["session_id"])]
    assert kinds.count("RunCompleted") == 1  # the same session, seen through REST


@pytest.mark.parametrize("key", [None, "tdk_not-a-real-key"])
def test_without_a_valid_key_mcp_answers_401_with_the_error_body(
    start_server: StartServer, key: str | None
) -> None:
    server = start_server("chat")
    headers = {"accept": "application/json, text/event-stream"}
    if key is not None:
        headers["authorization"] = f"Bearer {key}"
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"}}}  # fmt: skip
    answered = httpx.post(f"{server.url}/mcp", json=initialize, headers=headers, timeout=10)
    assert answered.status_code == 401, answered.text
    body = answered.json()
    assert body["error_code"] in ("UNAUTHORIZED", "INVALID_TOKEN") and body["detail"]


def test_a_viewer_key_cannot_send_a_message(start_server: StartServer) -> None:
    server = start_server("chat")
    account, http = user(server.client(), "mcp-viewer@example.org")
    key = api_key(http, account["workspace_id"], role="viewer")

    async def attempt() -> Any:
        async with connect(server, key) as client:
            return await client.call_tool("send_message", {"message": "hello"})

    result = asyncio.run(attempt())
    assert result.is_error and "FORBIDDEN" in str(result.content)
