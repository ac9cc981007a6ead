"""TokenDance as an MCP server, through the official `mcp` SDK's own client against `/mcp`
of one real `tokendance serve` (scripted model: `scripts/mcp_server.yaml`).

An API key's client delegates a task with `send_message` (progress notifications on the
way, the scripted answer at the end, the same run seen through REST), reads the
session's working memory, artifacts and artifact resources, runs the agent's own tools
(`agent__...`) and gets the action to approve when a run waits for a human. Without a
valid key `/mcp` answers 401 with the API's error body; another user's session is not
found and a viewer's key may read but not send.
"""

from __future__ import annotations

import asyncio
import base64
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import BlobResourceContents, CallToolResult, TextResourceContents

from tests.e2e.chat_helpers import audit_log, user
from tests.e2e.client import ERROR_KEYS, Server
from tests.e2e.conftest import module_server

pytestmark = [pytest.mark.e2e]

T = TypeVar("T")
NAMED = {"start_session", "send_message", "get_working_memory", "list_artifacts",
         "search_memories"}  # fmt: skip
ANSWER = (
    "Heat pumps deliver about three units of heat per unit of electricity, even in the "
    "cold: see the report and the deck."
)
NOBODY = "00000000-0000-0000-0000-000000000000"
MEMORY = "Alice wants figures in metric units"


@dataclass(frozen=True)
class Account:
    http: httpx.Client  # REST, with the user's access token
    workspace_id: str
    key: str  # a member API key of that workspace


@dataclass(frozen=True)
class Delegated:
    """What `send_message` answered a first task, and the progress it reported."""

    result: dict[str, Any]
    progress: list[tuple[float, str | None]]


@pytest.fixture(scope="module")
def server(servers: tuple[str, str], data_root: Path, template_database: str) -> Iterator[Server]:
    """One server for the module, on a database and a stream of its own."""
    with module_server(servers, data_root, template_database, "mcp_server") as started:
        yield started


def account(server: Server, email: str) -> Account:
    signed, http = user(server.client(), email)
    workspace = str(signed["workspace_id"])
    return Account(http, workspace, api_key(http, workspace))


def api_key(http: httpx.Client, workspace: str, role: str = "member") -> str:
    made = http.post("/api/v1/api-keys/", json={"name": f"mcp {role}", "role": role,
                                               "workspace_id": workspace})  # fmt: skip
    assert made.status_code == 201, made.text
    return str(made.json()["key"])


@pytest.fixture(scope="module")
def alice(server: Server) -> Account:
    """Alice, with a memory of her own (which no one else finds)."""
    alice = account(server, "alice-mcp@example.org")
    memory = {"text": MEMORY, "category": "preference"}
    assert alice.http.post("/api/v1/memories", json=memory).status_code == 201
    return alice


@pytest.fixture(scope="module")
def delegated(server: Server, alice: Account) -> Delegated:
    """Alice's client gives the agent a task in a new session, with a progress token."""
    progress: list[tuple[float, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, message))

    async def delegate(client: Client) -> CallToolResult:
        task = {"message": "Tell me about heat pumps in the cold"}
        return await client.call_tool("send_message", task, progress_callback=on_progress)

    return Delegated(data(mcp(server, alice.key, delegate)), progress)


def mcp(server: Server, key: str, work: Callable[[Client], Awaitable[T]], **options: Any) -> T:
    """`work` done by an MCP client of `/mcp` that sends `key` as its bearer token."""

    async def session() -> T:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60)
        transport = streamable_http_client(f"{server.url}/mcp", http_client=http)
        async with http, Client(transport, **options) as client:
            return await work(client)

    return asyncio.run(session())


def data(result: CallToolResult) -> dict[str, Any]:
    """A successful call's structured content (its text says the same)."""
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict), result
    assert result.content and result.content[0].type == "text"
    return result.structured_content


def error(result: CallToolResult, code: str) -> str:
    """A failed call's text, after checking it carries the API's error body."""
    assert result.is_error, result
    body = result.structured_content
    assert isinstance(body, dict) and body.keys() >= ERROR_KEYS, body
    assert body["error_code"] == code, body
    text = result.content[0].text if result.content[0].type == "text" else ""
    assert text.startswith(f"{code}: "), text
    return text


def test_an_mcp_client_delegates_a_task_and_reads_what_it_made(
    server: Server, alice: Account, delegated: Delegated
) -> None:
    answered = delegated.result
    assert answered["status"] == "completed" and answered["answer"] == ANSWER
    sid = answered["session_id"]
    made = {a["type"]: a for a in answered["artifacts"]}
    assert made.keys() == {"report", "ppt"}
    assert made["report"]["uri"] == f"tokendance://sessions/{sid}/artifacts/{made['report']['id']}"
    # Progress: numbered in order, from the stored events and the live text.
    steps = [done for done, _ in delegated.progress]
    assert steps == sorted(steps) and len(set(steps)) == len(steps) > 3
    said = [message or "" for _, message in delegated.progress]
    assert "tool update_plan running" in said and "tool create_doc: success" in said, said
    assert any(m.startswith("writing: ") for m in said), said
    # The same session, seen through REST: one run, completed.
    kinds = [e["type"] for e in audit_log(alice.http, sid)]
    assert kinds.count("RunRequested") == kinds.count("RunCompleted") == 1, kinds

    async def read(client: Client) -> dict[str, Any]:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        found = data(await client.call_tool("search_memories", {"query": "metric units"}))
        memory = data(await client.call_tool("get_working_memory", {"session_id": sid}))
        artifacts = data(await client.call_tool("list_artifacts", {"session_id": sid}))
        listed = [r.uri for r in (await client.list_resources()).resources]
        report = (await client.read_resource(made["report"]["uri"])).contents
        deck = (await client.read_resource(made["ppt"]["uri"])).contents
        templates = (await client.list_resource_templates()).resource_templates
        return {"tools": tools, "memory": memory, "artifacts": artifacts, "listed": listed,
                "report": report, "deck": deck, "templates": templates, "found": found}  # fmt: skip

    got = mcp(server, alice.key, read)
    tools = got["tools"]
    assert tools.keys() >= NAMED and {"agent__web_search", "agent__create_doc"} <= tools.keys()
    plan = tools["agent__update_plan"].input_schema
    assert {"items", "session_id"} <= set(plan["required"]) and "items" in plan["properties"]
    assert tools["send_message"].input_schema["required"] == ["message"]
    assert "Find heat pump facts" in got["memory"]["task_plan"]["content"]
    assert [m["text"] for m in got["found"]["items"]] == [MEMORY]
    assert {a["type"] for a in got["artifacts"]["items"]} == {"report", "ppt"}
    assert sorted(got["listed"]) == sorted(a["uri"] for a in made.values())
    [report] = got["report"]
    assert isinstance(report, TextResourceContents) and report.mime_type.startswith("text/")
    assert "Cold-climate heat pumps keep heating far below freezing." in report.text
    [deck] = got["deck"]
    assert isinstance(deck, BlobResourceContents)
    assert base64.b64decode(deck.blob)[:2] == b"PK"  # a .pptx is a zip
    [template] = got["templates"]
    assert template.uri_template == "tokendance://sessions/{session_id}/artifacts/{artifact_id}"


def test_a_run_waiting_for_an_approval_returns_the_action_to_approve(
    server: Server, alice: Account, delegated: Delegated
) -> None:
    sid = delegated.result["session_id"]

    async def ask(client: Client) -> CallToolResult:
        return await client.call_tool(
            "send_message", {"message": "Now tidy up my files", "session_id": sid}
        )

    waiting = data(mcp(server, alice.key, ask))
    assert waiting["status"] == "waiting_confirmation" and waiting["tool"] == "delete_file"
    assert waiting["session_id"] == sid and waiting["action_id"] in waiting["approve"]
    route = f"/api/v1/chat/{sid}/confirm"
    assert waiting["approve"].startswith(f"POST {route} ")
    refused = alice.http.post(route, json={"action_id": waiting["action_id"], "confirmed": False})
    assert refused.status_code == 200, refused.text


def test_the_agents_own_tools_run_in_a_session_as_the_rest_route_runs_them(
    server: Server, alice: Account
) -> None:
    async def work(client: Client) -> dict[str, Any]:
        started = data(await client.call_tool("start_session", {"title": "By hand"}))
        sid = started["session_id"]
        noted = await client.call_tool(
            "agent__note_progress", {"session_id": sid, "text": "Read the brief"}
        )
        bad = await client.call_tool("agent__update_plan", {"session_id": sid, "items": "x"})
        risky = await client.call_tool("agent__delete_file", {"session_id": sid, "path": "a.md"})
        memory = data(await client.call_tool("get_working_memory", {"session_id": sid}))
        return {"started": started, "noted": noted, "bad": bad, "risky": risky, "memory": memory}

    got = mcp(server, alice.key, work, mode="legacy")  # the initialize handshake era
    assert got["started"]["workspace_id"] == alice.workspace_id
    assert data(got["noted"])["status"] == "success"
    assert "Read the brief" in got["memory"]["progress"]["content"]
    assert got["bad"].is_error and got["bad"].structured_content["status"] == "error"
    risky = data(got["risky"])
    assert risky["status"] == "confirm_required" and risky["action_id"]
    events = audit_log(alice.http, got["started"]["session_id"])
    assert [e["type"] for e in events].count("ToolResultRecorded") == 2  # the third waits


@pytest.mark.parametrize(
    ("key", "code"),
    [("none", "UNAUTHORIZED"), ("garbage", "INVALID_TOKEN"), ("revoked", "TOKEN_REVOKED")],
)
def test_without_a_valid_key_mcp_answers_401_with_the_error_body(
    server: Server, alice: Account, key: str, code: str
) -> None:
    headers = {"accept": "application/json, text/event-stream"}
    if key == "garbage":
        headers["authorization"] = "Bearer tdk_not-a-real-key"
    elif key == "revoked":
        revoked = api_key(alice.http, alice.workspace_id)
        [made] = [k for k in alice.http.get("/api/v1/api-keys/").json()["items"]
                  if revoked.startswith(k["prefix"])]  # fmt: skip
        assert alice.http.delete(f"/api/v1/api-keys/{made['id']}").status_code == 204
        headers["authorization"] = f"Bearer {revoked}"
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"}}}  # fmt: skip
    answered = httpx.post(f"{server.url}/mcp", json=initialize, headers=headers, timeout=10)
    assert answered.status_code == 401, answered.text
    body = answered.json()
    assert body.keys() >= ERROR_KEYS and body["detail"] and body["error_code"] == code, body


def test_another_users_session_is_not_found_and_bad_input_is_a_tool_error(
    server: Server, alice: Account, delegated: Delegated
) -> None:
    bob = account(server, "bob-mcp@example.org")
    sid = delegated.result["session_id"]
    uri = delegated.result["artifacts"][0]["uri"]

    async def pry(client: Client) -> dict[str, Any]:
        on_session = {"session_id": sid}
        calls = {
            "memory": await client.call_tool("get_working_memory", on_session),
            "artifacts": await client.call_tool("list_artifacts", on_session),
            "send": await client.call_tool("send_message", {**on_session, "message": "Bob's"}),
            "agent": await client.call_tool("agent__note_progress", {**on_session, "text": "Bob"}),
            "nobody": await client.call_tool("get_working_memory", {"session_id": NOBODY}),
            "no_message": await client.call_tool("send_message", {}),
            "bad_limit": await client.call_tool("search_memories", {"query": "x", "limit": 0}),
            "bad_id": await client.call_tool("list_artifacts", {"session_id": "nope"}),
            "search": await client.call_tool("search_memories", {"query": "metric units"}),
        }
        with pytest.raises(MCPError) as read:
            await client.read_resource(uri)
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("no_such_tool", {})
        listed = (await client.list_resources()).resources
        return {**calls, "read": str(read.value), "unknown": str(unknown.value), "listed": listed}

    got = mcp(server, bob.key, pry)
    for name in ("memory", "artifacts", "send", "agent", "nobody"):
        said = error(got[name], "NOT_FOUND")
        assert "heat" not in said.lower(), said
    assert got["read"].startswith("NOT_FOUND: ") and "heat" not in got["read"].lower()
    assert got["listed"] == [] and data(got["search"])["items"] == []
    assert error(got["no_message"], "VALIDATION_ERROR") == "VALIDATION_ERROR: `message`: required"
    assert "`limit`" in error(got["bad_limit"], "VALIDATION_ERROR")
    assert "`session_id`" in error(got["bad_id"], "VALIDATION_ERROR")
    assert "no_such_tool" in got["unknown"]
    # Nothing of Bob's reached Alice's session.
    assert "Bob" not in str(audit_log(alice.http, sid))


def test_a_viewer_key_may_read_a_session_but_not_send_a_message(
    server: Server, alice: Account, delegated: Delegated
) -> None:
    viewer = api_key(alice.http, alice.workspace_id, role="viewer")
    sid = delegated.result["session_id"]

    async def attempt(client: Client) -> dict[str, CallToolResult]:
        return {
            "new": await client.call_tool("send_message", {"message": "hello"}),
            "same": await client.call_tool("send_message", {"message": "hi", "session_id": sid}),
            "read": await client.call_tool("get_working_memory", {"session_id": sid}),
        }

    got = mcp(server, viewer, attempt)
    assert "viewer" in error(got["new"], "FORBIDDEN")
    assert "viewer" in error(got["same"], "FORBIDDEN")
    assert "Find heat pump facts" in data(got["read"])["task_plan"]["content"]
