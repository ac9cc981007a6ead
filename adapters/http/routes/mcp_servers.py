"""A workspace's MCP servers: register (probed first), list, remove.

Registration connects to the server before anything is kept: a command that is not
there, a URL that does not speak MCP, or a tool the model could not be given answers
400 with the reason, and no secret (env or header values) is ever echoed back.
"""

from __future__ import annotations

from uuid import UUID

from litestar import Controller, delete, get, post
from litestar.params import FromPath, JSONBody
from litestar.status_codes import HTTP_201_CREATED, HTTP_204_NO_CONTENT

from adapters.http.deps import ApiDep, Caller
from adapters.http.errors import ApiError
from adapters.mcp.client import McpUnreachable, probe
from adapters.mcp.operator import config_of, operator_servers
from application.mcp_tools import McpToolSpec
from domain.mcp_servers import McpNameTaken, McpServerConfig
from schemas.mcp import McpServerBody, McpServerOut, McpToolOut


class McpServersController(Controller):
    path = "/api/v1/workspaces/{workspace_id:uuid}/mcp-servers"
    tags = ["mcp"]

    @post("/", status_code=HTTP_201_CREATED)
    async def register_mcp_server(
        self, workspace_id: FromPath[UUID], data: JSONBody[McpServerBody], request: Caller,
        api: ApiDep,
    ) -> McpServerOut:  # fmt: skip
        """Register an MCP server: its tools join the agent's (`name__tool`) from the
        workspace sessions' next run. Admins of the workspace only."""
        await api.bridge(
            api.accounts.authorize, request.user, workspace_id, action="manage_workspaces"
        )
        config = config_of(data)
        operator = operator_servers(api.mcp_operator_file)
        if any(s.name == config.name for s in operator):
            raise McpNameTaken(f"the operator's MCP server is named {config.name!r}")
        try:
            tools = await probe(config, timeout=api.mcp_probe_timeout)
        except McpUnreachable as e:
            raise ApiError(400, str(e), e.code) from None
        saved = await api.bridge(
            api.accounts.register_mcp_server, request.user, workspace_id, config
        )
        return _out(saved, "workspace", tools)

    @get("/")
    async def list_mcp_servers(
        self, workspace_id: FromPath[UUID], request: Caller, api: ApiDep
    ) -> list[McpServerOut]:
        """The workspace's MCP servers, and the operator's (given to every workspace)."""
        own = await api.bridge(api.accounts.mcp_servers, request.user, workspace_id)
        given = operator_servers(api.mcp_operator_file)
        return [*(_out(s, "operator") for s in given), *(_out(s, "workspace") for s in own)]

    @delete("/{name:str}", status_code=HTTP_204_NO_CONTENT)
    async def remove_mcp_server(
        self, workspace_id: FromPath[UUID], name: FromPath[str], request: Caller, api: ApiDep
    ) -> None:
        """Remove a server: its tools leave the agent's from the next run."""
        await api.bridge(api.accounts.remove_mcp_server, request.user, workspace_id, name)


def _out(
    server: McpServerConfig, source: str, tools: tuple[McpToolSpec, ...] | None = None
) -> McpServerOut:
    return McpServerOut(
        name=server.name, transport=server.transport,
        command=list(server.command) or None, url=server.url,
        env_names=sorted(server.env), header_names=sorted(server.headers), risky=server.risky,
        source="operator" if source == "operator" else "workspace",
        tools=None if tools is None else [
            McpToolOut(name=t.name, description=t.description, risky=t.risky) for t in tools
        ],
    )  # fmt: skip
