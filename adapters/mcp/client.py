"""`McpConnections`: the `McpClient` port on the official `mcp` SDK.

One live connection per (workspace, server), opened when first needed and kept for
later runs: a stdio server is a child process (its environment is its registered env
plus PATH, HOME, LANG and the few names the SDK always passes, LOGNAME, SHELL, TERM and
USER; never the engine's secrets), an http server is a Streamable HTTP session with its
headers. The SDK's contexts must be entered and left by one task, so each connection
lives in a task of its own that holds them open until closed.
A server that died is started again for the next call; a call it was in the middle of
fails with the reason, kept in the run like any tool error.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from uuid import UUID

import httpx2

from application.mcp_tools import McpToolSpec, Toolset, check_tool_schema
from application.ports import ToolExecutionError
from domain.mcp_servers import SEPARATOR, McpServerConfig

if TYPE_CHECKING:  # the SDK is imported when a server is first connected (a second of imports)
    from mcp import Client

log = logging.getLogger(__name__)

ServersOf = Callable[[UUID], Awaitable[list[McpServerConfig]]]
PASSED_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR")


class McpUnreachable(Exception):
    """A server that could not be started, reached or initialized, or that answers with
    tools the model cannot be given; the message says which and why (no secret in it)."""

    def __init__(self, message: str, code: str = "MCP_SERVER_UNREACHABLE") -> None:
        super().__init__(message)
        self.code = code


@dataclass
class _Connection:
    config: McpServerConfig
    timeout: float  # to start and answer; a call has its own
    client: Client | None = None
    tools: list[Any] = field(default_factory=list)
    error: BaseException | None = None
    task: asyncio.Task[None] | None = None
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    stop: asyncio.Event = field(default_factory=asyncio.Event)
    checked: float = 0.0  # when the server last answered a ping (loop time)

    @property
    def alive(self) -> bool:
        return self.client is not None and self.task is not None and not self.task.done()

    async def open(self) -> None:
        self.task = asyncio.create_task(self._hold(), name=f"mcp:{self.config.name}")
        try:
            await asyncio.wait_for(self.ready.wait(), self.timeout)
        except TimeoutError:
            await self.close()
            raise McpUnreachable(
                f"MCP server {self.config.name} did not answer within {self.timeout:g}s"
            ) from None
        if self.error is not None:
            raise McpUnreachable(f"MCP server {self.config.name}: {_why(self.error)}")

    async def _hold(self) -> None:
        try:
            from mcp import Client

            async with Client(_transport(self.config), read_timeout_seconds=self.timeout) as client:
                self.tools = await _all_tools(client)
                self.client = client
                self.ready.set()
                await self.stop.wait()
        except BaseException as e:  # noqa: BLE001 - kept, reported by `open` or the call
            self.error = e
        finally:
            self.client = None
            self.ready.set()

    async def answers(self) -> bool:
        """Whether the server is there, when it was not asked just now (a server that
        died since is started again before a call is sent to it). Asked by listing its
        tools again, which also keeps them current: `ping` is gone from the 2026 protocol.
        """
        if not self.alive or self.client is None:
            return False
        now = asyncio.get_running_loop().time()
        if now - self.checked < 1.0:
            return True
        try:
            self.tools = await asyncio.wait_for(_all_tools(self.client), min(self.timeout, 5.0))
        except Exception:
            return False
        self.checked = now
        return True

    async def close(self) -> None:
        self.stop.set()
        if self.task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self.task), 5)
            except (TimeoutError, asyncio.CancelledError, Exception):
                self.task.cancel()


async def _all_tools(client: Client) -> list[Any]:
    """Every page of the server's tools, from the server (not the client's cache)."""
    tools: list[Any] = []
    cursor: str | None = None
    for _ in range(100):
        page = await client.list_tools(cursor=cursor, cache_mode="refresh")
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            break
    return tools


def _transport(config: McpServerConfig) -> Any:
    from mcp import StdioServerParameters
    from mcp.client.streamable_http import streamable_http_client

    if config.transport == "stdio":
        env = {k: os.environ[k] for k in PASSED_ENV if k in os.environ} | config.env
        command, *args = config.command
        if command in ("python", "python3"):
            command = sys.executable  # the engine's interpreter: its packages
        return StdioServerParameters(command=command, args=args, env=env)
    http = httpx2.AsyncClient(headers=config.headers, timeout=httpx2.Timeout(30.0, read=300.0))
    return streamable_http_client(str(config.url), http_client=http)


def _why(error: BaseException) -> str:
    """What went wrong, without the arguments (a command line or URL may hold a secret)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    if isinstance(error, FileNotFoundError):
        return "its command was not found"
    if isinstance(error, httpx2.ConnectError | ConnectionError):
        return "could not connect"
    text = str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {text[:200]}" if text else type(error).__name__


def tool_specs(config: McpServerConfig, tools: list[Any]) -> tuple[McpToolSpec, ...]:
    """The server's tools as a session records them; `McpUnreachable` for a tool the
    model cannot be given (a schema that is not JSON Schema, a name it cannot take)."""
    specs: list[McpToolSpec] = []
    for tool in tools:
        problem = check_tool_schema(tool.input_schema)
        if problem is not None:
            raise McpUnreachable(
                f"MCP server {config.name}: tool {tool.name!r}: {problem}", "MCP_BAD_TOOL_SCHEMA"
            )
        name = f"{config.name}{SEPARATOR}{tool.name}"
        if len(name) > 64 or not all(c.isalnum() or c in "_-" for c in tool.name):
            raise McpUnreachable(
                f"MCP server {config.name}: tool {tool.name!r}: its name cannot be given "
                "to a model (a-z, 0-9, _ and -; 64 in all)",
                "MCP_BAD_TOOL_NAME",
            )
        if any(s.name == name for s in specs):
            raise McpUnreachable(
                f"MCP server {config.name}: two tools are called {tool.name!r}", "MCP_NAME_TAKEN"
            )
        specs.append(McpToolSpec(config.name, tool.name, tool.description or tool.name,
                                 dict(tool.input_schema), config.risky))  # fmt: skip
    return tuple(specs)


async def probe(config: McpServerConfig, timeout: float = 10.0) -> tuple[McpToolSpec, ...]:
    """Connect, initialize and list the tools, then close: what registration checks."""
    connection = _Connection(config, timeout)
    try:
        await connection.open()
        return tool_specs(config, connection.tools)
    finally:
        await connection.close()


class McpConnections:
    """The MCP servers of workspaces, connected as needed (`McpClient`)."""

    def __init__(
        self, servers_of: ServersOf, *, timeout: float = 60.0, start_timeout: float = 30.0
    ) -> None:
        self._servers_of = servers_of
        self._timeout = timeout  # a call's
        self._start_timeout = start_timeout  # to start, initialize and list the tools
        self._open: dict[tuple[UUID, str], _Connection] = {}
        self._lock = asyncio.Lock()

    async def toolset(self, workspace_id: UUID) -> Toolset:
        tools: list[McpToolSpec] = []
        down: list[tuple[str, str]] = []
        for config in await self._servers_of(workspace_id):
            try:
                connection = await self._connection(workspace_id, config)
                tools.extend(tool_specs(config, connection.tools))
            except McpUnreachable as e:
                down.append((config.name, str(e)))
        return Toolset(tuple(tools), tuple(down))

    async def call(self, workspace_id: UUID, tool: McpToolSpec, args: dict[str, Any]) -> str:
        configs = {c.name: c for c in await self._servers_of(workspace_id)}
        config = configs.get(tool.server)
        if config is None:
            raise ToolExecutionError(f"MCP server {tool.server} is no longer registered")
        try:
            connection = await self._connection(workspace_id, config)
        except McpUnreachable as e:
            raise ToolExecutionError(str(e)) from None
        client = connection.client
        if client is None:
            raise ToolExecutionError(f"MCP server {tool.server} is not connected")
        try:
            result = await asyncio.wait_for(
                client.call_tool(tool.tool, args, read_timeout_seconds=self._timeout),
                self._timeout + 1,
            )
        except Exception as e:
            raise self._failure(tool, e, connection) from None
        text = _text_of(result.content, result.structured_content)
        if result.is_error:
            raise ToolExecutionError(f"MCP server {tool.server}: {text or 'the tool failed'}")
        return text

    def _failure(
        self, tool: McpToolSpec, error: Exception, connection: _Connection
    ) -> ToolExecutionError:
        """What the model reads of a call that got no answer."""
        from mcp import MCPError
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

        code = error.code if isinstance(error, MCPError) else None
        if isinstance(error, TimeoutError) or code == REQUEST_TIMEOUT:
            why = f"{tool.tool} timed out after {self._timeout:g}s"
        elif code == CONNECTION_CLOSED or not connection.alive:
            why = f"the server exited during the call of {tool.tool} (started again next call)"
        else:
            why = _why(error)
        return ToolExecutionError(f"MCP server {tool.server}: {why}")

    async def aclose(self) -> None:
        for connection in list(self._open.values()):
            await connection.close()
        self._open.clear()

    async def _connection(self, workspace_id: UUID, config: McpServerConfig) -> _Connection:
        key = (workspace_id, config.name)
        async with self._lock:
            connection = self._open.get(key)
            if (
                connection is not None
                and connection.config == config
                and await connection.answers()
            ):
                return connection
            if connection is not None:  # died, or registered anew: start it again
                await connection.close()
            connection = _Connection(config, self._start_timeout)
            self._open[key] = connection
        await connection.open()
        return connection


def _text_of(content: list[Any], structured: object) -> str:
    parts = []
    for block in content:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)
        elif kind == "resource":
            parts.append(
                getattr(block.resource, "text", None) or f"[resource {block.resource.uri}]"
            )
        else:
            parts.append(f"[{kind} content]")
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False))
    return "\n".join(parts)
