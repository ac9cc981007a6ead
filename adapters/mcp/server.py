"""TokenDance as an MCP server (Streamable HTTP at `/mcp`), on the official `mcp` SDK's
low-level `Server`.

Claude Desktop, an IDE or another agent delegates work with it: `start_session`,
`send_message` (the run to its end, progress as notifications), `get_working_memory`,
`list_artifacts`, `search_memories`, the agent's own tools as `agent__<name>`, and a
session's artifacts as resources. Every call acts as the caller the API authenticated
(a bearer access token or an API key: the app's authentication runs before the MCP
layer sees a request, `server_mount.py`) through the services and checks of the REST
routes. A failure a caller can cause is a tool result with `isError` and the API's
error body (`{detail, error_code, timestamp}`); nothing else of it leaves the server.
"""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import version
from typing import Any, Generic, TypeVar

import msgspec
import psycopg
from eventsourcing.persistence import InterfaceError, OperationalError
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    CallToolRequestParams,
    CallToolResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
    TextContent,
    Tool,
    ToolAnnotations,
)
from starlette.requests import HTTPConnection

from adapters.http.deps import Api
from adapters.http.errors import ApiError, named
from adapters.http.reads.tenant_reads import caller_in
from adapters.mcp import server_resources as resources
from adapters.mcp.server_agent_tools import PREFIX, agent_tools, run_agent_tool
from adapters.mcp.server_bodies import (
    RunOut,
    SearchMemoriesIn,
    SendMessageIn,
    SessionIn,
    SessionStartedOut,
    StartSessionIn,
    output_schema,
)
from adapters.mcp.server_call import Answer, Call
from adapters.mcp.server_run import Unavailable, send_message
from adapters.mcp.server_tools import (
    get_working_memory,
    list_artifacts,
    search_memories,
    start_session,
)
from application.tokens import Principal
from application.tools.base import input_schema
from domain.errors import DomainError
from schemas.api import Error, WorkingMemoryOut
from schemas.artifacts import ArtifactPage
from schemas.memories import MemoryHits

B = TypeVar("B", bound=msgspec.Struct)
T = TypeVar("T")
Context = ServerRequestContext[Any, Any]
log = logging.getLogger(__name__)
INSTRUCTIONS = (
    "TokenDance runs an autonomous research agent: it searches and reads the web with "
    "citations, writes reports and slide decks, runs code in a sandbox and keeps long-term "
    "memory. Give it a task with send_message (it answers when the run ends; sessions keep "
    "their history), then read what it made with list_artifacts and the artifact resources."
)
_AT = re.compile(r"^(.*) - at `\$\.?(.*)`$")
_FIELD = re.compile(r"^Object (missing required|contains unknown) field `(.+)`$")
_UNAVAILABLE = (OperationalError, InterfaceError, psycopg.OperationalError)


@dataclass(frozen=True)
class NamedTool(Generic[B]):
    """One of TokenDance's own MCP tools: its input Struct validates the arguments."""

    name: str
    description: str
    body: type[B]
    output: type[msgspec.Struct]
    run: Callable[[Call, B], Awaitable[Answer]]
    read_only: bool = True
    open_world: bool = False  # it reaches beyond TokenDance (the agent's web searches)

    def definition(self) -> Tool:
        return Tool(
            name=self.name, description=self.description, input_schema=input_schema(self.body),
            output_schema=output_schema(self.output),
            annotations=ToolAnnotations(
                read_only_hint=self.read_only, open_world_hint=self.open_world
            ),
        )  # fmt: skip

    async def __call__(self, call: Call, arguments: dict[str, object]) -> Answer:
        return await self.run(call, msgspec.convert(arguments, self.body))


TOOLS: tuple[NamedTool[Any], ...] = (
    NamedTool(
        "start_session", "Start a session (in your first workspace unless `workspace_id` "
        "says which); its id.", StartSessionIn, SessionStartedOut, start_session, read_only=False,
    ),
    NamedTool(
        "send_message", "Give the agent a task or a question (in a new session unless "
        "`session_id` names one) and wait for its run to end: the final answer with its "
        "sources, the artifacts it made and the session id. Progress comes as notifications. "
        "A run that needs a human's approval returns at once with the action to approve.",
        SendMessageIn, RunOut, send_message, read_only=False, open_world=True,
    ),
    NamedTool(
        "get_working_memory", "A session's working memory: its task plan, findings (with "
        "their sources) and progress notes.", SessionIn, WorkingMemoryOut, get_working_memory,
    ),
    NamedTool(
        "list_artifacts", "A session's artifacts (reports, decks, files), each with the "
        "resource URI that reads it.", SessionIn, ArtifactPage, list_artifacts,
    ),
    NamedTool(
        "search_memories", "Long-term memories you may read, best first, by meaning and "
        "keywords.", SearchMemoriesIn, MemoryHits, search_memories,
    ),
)  # fmt: skip


def session_manager(api: Api) -> StreamableHTTPSessionManager:
    """The MCP server on `api`, served statelessly over Streamable HTTP (`server_mount.py`)."""
    return StreamableHTTPSessionManager(
        app=mcp_server(api),
        stateless=True,
        security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )


def mcp_server(api: Api) -> Server[Any]:
    """The MCP server over the app's services."""
    named = {t.name: t for t in TOOLS}
    agents = agent_tools(api.tools)
    listed = ListToolsResult(tools=[t.definition() for t in TOOLS] + agents)
    schemas = {t.name: t.input_schema for t in listed.tools}

    async def list_tools(ctx: Context, params: PaginatedRequestParams | None) -> ListToolsResult:
        return listed

    async def call_tool(ctx: Context, params: CallToolRequestParams) -> CallToolResult:
        if params.name not in schemas:
            raise MCPError(INVALID_PARAMS, f"unknown tool {params.name!r}")
        call = _call(api, ctx)
        arguments = params.arguments or {}
        try:
            if (tool := named.get(params.name)) is not None:
                answer = await tool(call, arguments)
            else:
                agent = api.tools.get(params.name.removeprefix(PREFIX))
                answer = await run_agent_tool(call, agent, arguments)
        except Exception as e:
            return _tool_error(*_translated(e))
        return CallToolResult(
            content=[TextContent(type="text", text=answer.text)],
            structured_content=msgspec.to_builtins(answer.data),
            is_error=answer.is_error,
        )

    async def list_resources(
        ctx: Context, params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        cursor = None if params is None else params.cursor
        return await _or_mcp_error(resources.list_resources(_call(api, ctx), cursor))

    async def list_templates(
        ctx: Context, params: PaginatedRequestParams | None
    ) -> ListResourceTemplatesResult:
        return resources.TEMPLATES

    async def read_resource(ctx: Context, params: ReadResourceRequestParams) -> ReadResourceResult:
        return await _or_mcp_error(resources.read_resource(_call(api, ctx), params.uri))

    return Server(
        "tokendance", version=version("tokendance"), title="TokenDance",
        instructions=INSTRUCTIONS, get_tool_input_schema=schemas.get,
        on_list_tools=list_tools, on_call_tool=call_tool, on_list_resources=list_resources,
        on_list_resource_templates=list_templates, on_read_resource=read_resource,
    )  # fmt: skip


def _call(api: Api, ctx: Context) -> Call:
    """The call's caller: whom the app's authentication found for its HTTP request."""
    request = ctx.request
    user = request.scope.get("user") if isinstance(request, HTTPConnection) else None
    if not isinstance(user, Principal):  # the mount is behind authentication: never
        raise MCPError(INVALID_REQUEST, "UNAUTHORIZED: a bearer access token is required")
    if isinstance(request, HTTPConnection):  # its organizations, for the read models
        caller_in(request.scope)
    steps = itertools.count(1)

    async def progress(words: str) -> None:  # a no-op without the client's progress token
        await ctx.session.report_progress(next(steps), None, words)

    return Call(api, user, progress)


async def _or_mcp_error(work: Awaitable[T]) -> T:
    """A resource request's result, or the MCP error its failure is."""
    try:
        return await work
    except Exception as e:
        code, detail = _translated(e)
        kind = INTERNAL_ERROR if code in ("INTERNAL_ERROR", "UNAVAILABLE") else INVALID_PARAMS
        raise MCPError(kind, f"{code}: {detail}", {"error_code": code, "detail": detail}) from None


def _tool_error(code: str, detail: str) -> CallToolResult:
    body = Error(detail=detail, error_code=code, timestamp=datetime.now(UTC).isoformat())
    return CallToolResult(
        content=[TextContent(type="text", text=f"{code}: {detail}")],
        structured_content=msgspec.to_builtins(body),
        is_error=True,
    )


def _translated(e: Exception) -> tuple[str, str]:
    """(error code, detail) of a failure, as the HTTP API words it; anything unexpected
    is logged here and said no more of."""
    match e:
        case DomainError():
            return e.code, str(e)
        case ApiError():
            return e.code, str(e.detail)
        case msgspec.ValidationError():
            return "VALIDATION_ERROR", _invalid(str(e))
        case Unavailable():
            return e.code, str(e)
        case _ if isinstance(e, _UNAVAILABLE):
            log.warning("database unavailable in an MCP call: %s", e)
            return "UNAVAILABLE", "the database is unavailable; try again shortly"
        case _:
            log.exception("unexpected error in an MCP call", exc_info=e)
            return "INTERNAL_ERROR", "internal server error"


def _invalid(problem: str) -> str:
    """msgspec's words for a bad argument, as the REST API's: "`message`: required"."""
    field = ""
    if at := _AT.match(problem):
        problem, field = at.group(1), at.group(2)
    if missing := _FIELD.match(problem):
        where = f"{field}.{missing.group(2)}" if field else missing.group(2)
        return named(
            where, "required" if missing.group(1).startswith("missing") else "unknown field"
        )
    return named(field, problem) if field else f"the arguments: {problem}"
