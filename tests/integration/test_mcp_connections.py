"""`McpConnections` against the small MCP server of `tests/fakes/mcp_calc.py`, started for
real over stdio by the official SDK: a server's environment is its registered env and
nothing of the engine's; one process serves every call until it dies, and the next call
starts it again; a tool error, a timeout and an unreachable server say why; closing
stops the processes. The operator's file of servers loads, or stops the start.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path
from uuid import UUID, uuid4

import psutil
import pytest

from adapters.mcp.client import McpConnections, probe
from adapters.mcp.operator import operator_servers
from application.mcp_tools import McpToolSpec
from application.ports import ToolExecutionError
from domain.mcp_servers import McpServerConfig

CALC = McpServerConfig(
    "calc", "stdio", ("python", "-m", "tests.fakes.mcp_calc"), env={"CALC_TOKEN": "t0ken"}
)
ENGINE_SECRET = "TOKENDANCE_TEST_ENGINE_SECRET"


def spec(tool: str, server: str = "calc") -> McpToolSpec:
    return McpToolSpec(server, tool, tool, {"type": "object"}, False)


def pid_of(whoami: str) -> int:
    found = re.search(r"pid=(\d+)", whoami)
    assert found, whoami
    return int(found.group(1))


@pytest.fixture
async def connections() -> AsyncIterator[tuple[McpConnections, UUID]]:
    workspace = uuid4()
    servers = {workspace: [CALC]}

    async def servers_of(workspace_id: UUID) -> list[McpServerConfig]:
        return servers.get(workspace_id, [])

    made = McpConnections(servers_of, timeout=2.0)
    yield made, workspace
    await made.aclose()


async def test_a_stdio_server_gets_its_env_and_none_of_the_engine_s(
    connections: tuple[McpConnections, UUID], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(ENGINE_SECRET, "do-not-pass")
    mcp, workspace = connections
    toolset = await mcp.toolset(workspace)
    assert [t.name for t in toolset.tools] == ["calc__add", "calc__slow", "calc__fail",
                                               "calc__whoami"]  # fmt: skip
    assert toolset.unavailable == ()
    assert await mcp.call(workspace, spec("add"), {"a": 2, "b": 3}) == "5"
    whoami = await mcp.call(workspace, spec("whoami"), {})
    assert "token=t0ken" in whoami
    names = set(whoami.split("env=")[1].split(","))
    assert ENGINE_SECRET not in names and "CALC_TOKEN" in names and "PATH" in names
    assert not {n for n in names if n.startswith("TOKENDANCE_")}
    # The same process serves the next call: the connection is kept.
    assert pid_of(await mcp.call(workspace, spec("whoami"), {})) == pid_of(whoami)


async def test_a_server_that_died_is_started_again_and_closing_stops_it(
    connections: tuple[McpConnections, UUID],
) -> None:
    mcp, workspace = connections
    first = pid_of(await mcp.call(workspace, spec("whoami"), {}))
    psutil.Process(first).kill()
    await until_gone(first)
    second = pid_of(await mcp.call(workspace, spec("whoami"), {}))
    assert second != first and psutil.pid_exists(second)
    await mcp.aclose()
    await until_gone(second)


async def until_gone(pid: int) -> None:
    """Wait for a process to end, without reaping it (the SDK's child watcher does)."""
    for _ in range(200):
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return
        except psutil.NoSuchProcess:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"process {pid} still runs")


async def test_errors_and_timeouts_are_tool_failures_that_say_why(
    connections: tuple[McpConnections, UUID],
) -> None:
    mcp, workspace = connections
    with pytest.raises(ToolExecutionError, match=r"MCP server calc: .*no such thing"):
        await mcp.call(workspace, spec("fail"), {"reason": "no such thing"})
    with pytest.raises(ToolExecutionError, match="slow timed out after 2s"):
        await mcp.call(workspace, spec("slow"), {"seconds": 30})
    with pytest.raises(ToolExecutionError, match="no longer registered"):
        await mcp.call(workspace, spec("add", server="gone"), {"a": 1, "b": 1})
    assert await mcp.call(workspace, spec("add"), {"a": 1, "b": 1}) == "2"  # still there


async def test_a_server_that_cannot_start_is_left_out_of_the_toolset_with_the_reason() -> None:
    broken = McpServerConfig("broken", "stdio", ("no-such-mcp-binary",), env={"K": "secret"})
    workspace = uuid4()

    async def servers_of(_: UUID) -> list[McpServerConfig]:
        return [broken, CALC]

    mcp = McpConnections(servers_of, timeout=5.0)
    try:
        toolset = await mcp.toolset(workspace)
    finally:
        await mcp.aclose()
    assert {t.server for t in toolset.tools} == {"calc"}
    ((name, reason),) = toolset.unavailable
    assert name == "broken" and "command was not found" in reason and "secret" not in reason


async def test_registration_refuses_a_tool_whose_schema_is_not_json_schema() -> None:
    bad = McpServerConfig("calc", "stdio", ("python", "-m", "tests.fakes.mcp_calc", "--bad-schema"))
    with pytest.raises(Exception, match="'add': its inputSchema is not valid JSON Schema") as e:
        await probe(bad, timeout=10.0)
    assert getattr(e.value, "code", None) == "MCP_BAD_TOOL_SCHEMA"


def test_the_operator_s_file_gives_servers_or_stops_the_start(tmp_path: Path) -> None:
    given = tmp_path / "mcp.yaml"
    given.write_text(
        "- {name: calc, transport: stdio, command: python -m tests.fakes.mcp_calc,"
        " env: {CALC_TOKEN: x}, risky: true}\n"
        "- {name: web, transport: http, url: 'http://127.0.0.1:9/mcp', headers: {X-Key: y}}\n"
    )
    calc, web = operator_servers(given)
    assert calc.command == ("python", "-m", "tests.fakes.mcp_calc") and calc.risky
    assert calc.env == {"CALC_TOKEN": "x"} and web.headers == {"X-Key": "y"}
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("- {name: Bad__Name, transport: stdio, command: x}\n")
    with pytest.raises(SystemExit, match="TOKENDANCE_MCP_SERVERS"):
        operator_servers(wrong)
    assert os.environ.get(ENGINE_SECRET) is None
