"""MCP servers' tools in a session: what the model is offered and how a call runs.

A run asks `McpClient.toolset` for its workspace's tools at its start; when they differ
from the last toolset the session recorded, a `McpToolsetChanged` event records them,
so every request stays a pure function of the log (a replay offers the same tools).
A call of `server__tool` is checked against the tool's recorded JSON Schema, then sent
to the server; its result, an error or a timeout is kept like any tool's.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar, Protocol
from uuid import UUID

import jsonschema
import msgspec

from application.ports import ToolExecutionError
from application.tools.base import AnyTool, Tool, ToolContext
from application.tools.registry import ToolRegistry, ToolRejected
from domain.conversation import ModelRequest, ToolSpec
from domain.ledger import Ledger
from domain.mcp_servers import SEPARATOR
from domain.session import AgentSession as S

if TYPE_CHECKING:
    from application.run_state import RunState

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class McpToolSpec:
    """One tool of one MCP server, as a session records it."""

    server: str
    tool: str
    description: str
    input_schema: dict[str, Any]
    risky: bool

    @property
    def name(self) -> str:
        return f"{self.server}{SEPARATOR}{self.tool}"

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, self.input_schema)

    def to_json(self) -> dict[str, Any]:
        return {"server": self.server, "tool": self.tool, "description": self.description,
                "input_schema": self.input_schema, "risky": self.risky}  # fmt: skip

    @classmethod
    def of(cls, raw: Mapping[str, Any]) -> McpToolSpec:
        return cls(raw["server"], raw["tool"], raw["description"], dict(raw["input_schema"]),
                   bool(raw["risky"]))  # fmt: skip


@dataclass(frozen=True)
class Toolset:
    """A workspace's MCP tools now, and the servers that could not be reached (why)."""

    tools: tuple[McpToolSpec, ...] = ()
    unavailable: tuple[tuple[str, str], ...] = ()


class McpClient(Protocol):
    """The MCP servers of workspaces, connected (`adapters.mcp.client`)."""

    async def toolset(self, workspace_id: UUID) -> Toolset: ...

    async def call(self, workspace_id: UUID, tool: McpToolSpec, args: dict[str, Any]) -> str:
        """The tool's text result; `ToolExecutionError` for an error, a timeout or a
        server that died during the call."""
        ...

    async def aclose(self) -> None:
        """Close every connection (the process is stopping; its runs have ended)."""
        ...


class McpArgs(msgspec.Struct):
    """A call's arguments as the model sent them (checked against the server's schema)."""

    arguments: dict[str, Any]


class McpTool(Tool[McpArgs]):
    """Base of the tool made for each MCP tool a session has (`session_tools`)."""

    Args = McpArgs
    mcp: ClassVar[McpToolSpec]
    client: ClassVar[McpClient | None]
    timeout = 600.0  # the client's own timeout fires first, with a clearer error

    async def run(self, args: McpArgs, context: ToolContext) -> str:
        if self.client is None or context.workspace_id is None:
            raise ToolExecutionError("MCP servers are not available to this engine")
        return await self.client.call(context.workspace_id, self.mcp, args.arguments)

    def describe(self, args: McpArgs) -> str:
        shown = msgspec.json.encode(args.arguments).decode()
        return f"{self.name} (MCP server {self.mcp.server}) {shown[:300]}"


def mcp_tool(spec: McpToolSpec, client: McpClient | None, timeout: float) -> AnyTool:
    """A tool for `spec`: its name, schema and risk are what the session recorded."""

    class Bound(McpTool):
        name = spec.name
        description = spec.description
        risky = spec.risky
        mcp = spec

    Bound.client = client
    Bound.timeout = timeout + 5.0
    Bound.__name__ = Bound.__qualname__ = f"Mcp_{spec.name}"
    return Bound()


class SessionTools(ToolRegistry):
    """The built-in tools, and a session's MCP tools checked against their own schemas."""

    def __init__(self, builtin: ToolRegistry, mcp: Iterable[AnyTool]) -> None:
        super().__init__([*builtin, *mcp])
        self._builtin = builtin

    def specs(self) -> tuple[ToolSpec, ...]:
        return self._builtin.specs()  # the MCP specs come from the session's log

    def parse(self, name: str, raw: dict[str, object]) -> tuple[AnyTool, msgspec.Struct]:
        tool = self.get(name)
        if not isinstance(tool, McpTool):
            return super().parse(name, raw)
        try:
            jsonschema.validate(raw, tool.mcp.input_schema)
        except jsonschema.ValidationError as e:
            raise ToolRejected(f"invalid arguments for {name}: {e.message}") from None
        except jsonschema.SchemaError as e:
            raise ToolRejected(f"{name} has no usable schema: {e.message}") from None
        return tool, McpArgs(dict(raw))


def session_tools(
    builtin: ToolRegistry, specs: Sequence[McpToolSpec], client: McpClient | None, timeout: float
) -> ToolRegistry:
    if not specs:
        return builtin
    taken = set(builtin.names)
    return SessionTools(
        builtin, [mcp_tool(s, client, timeout) for s in specs if s.name not in taken]
    )


def check_tool_schema(schema: object) -> str | None:
    """Why a tool's input schema cannot be given to a model, or None when it can."""
    if not isinstance(schema, dict) or schema.get("type", "object") != "object":
        return "its inputSchema is not a JSON Schema of an object"
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as e:
        return f"its inputSchema is not valid JSON Schema: {e.message}"
    return None


def toolset_of(e: S.McpToolsetChanged | None) -> Toolset:
    """The toolset an event recorded (none recorded: no MCP tools)."""
    if e is None:
        return Toolset()
    return Toolset(
        tuple(McpToolSpec.of(t) for t in e.tools),
        tuple((d["server"], d["reason"]) for d in e.unavailable),
    )


def recorded(ledger: Ledger) -> tuple[McpToolSpec, ...]:
    return toolset_of(ledger.mcp_toolset).tools


async def refresh_toolset(state: RunState, client: McpClient | None) -> None:
    """At a run's start: record the workspace's MCP tools if they changed since the
    session last recorded them (a server added, removed, down, or back)."""
    workspace = state.ledger.workspace_id
    if client is None or workspace is None:
        return
    try:
        now = await client.toolset(workspace)
    except Exception:  # the tools stay as recorded; the run goes on with them
        log.exception("listing the MCP tools of workspace %s failed", workspace)
        return
    if now == toolset_of(state.ledger.mcp_toolset):
        return
    tools = [t.to_json() for t in now.tools]
    down = [{"server": s, "reason": r} for s, r in now.unavailable]
    await state.record(
        state.sessions.change_mcp_toolset, state.session_id, state.run_id, tools, down
    )


def with_mcp_tools(state: RunState, request: ModelRequest) -> ModelRequest:
    """The request with the session's MCP tools after the built-in ones (so the cached
    prefix of the built-ins holds), those the session's `allowed_tools` allow."""
    specs = recorded(state.ledger)
    allowed = state.settings.allowed_tools
    offered = tuple(s.spec for s in specs if allowed is None or s.name in allowed)
    return replace(request, tools=request.tools + offered) if offered else request
