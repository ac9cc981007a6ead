"""MCP servers a workspace registers: their tools join its agent's tool list.

One aggregate per workspace holds its servers. Secrets (an env value, a header value)
enter an event only sealed (`application.mcp_servers` seals them); the names are kept
in clear so a listing can say which are set without showing one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal
from uuid import UUID, uuid5

from eventsourcing.domain import Aggregate, event

from domain.errors import InvalidValue, NotFound

McpTransport = Literal["stdio", "http"]
MCP_SERVERS_NAMESPACE = UUID("0b6c3a7e-2f4d-4d1b-9e63-5a8c1f0e7d24")
NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
SEPARATOR = "__"  # a server's tool `t` of server `s` is `s__t` to the model


class McpServerNotFound(NotFound):
    code = "MCP_SERVER_NOT_FOUND"


class McpServerInvalid(InvalidValue):
    """A registration that cannot be right (its name, its command, its URL)."""

    code = "MCP_SERVER_INVALID"


class McpNameTaken(InvalidValue):
    code = "MCP_NAME_TAKEN"


@dataclass(frozen=True)
class McpServerConfig:
    """How to reach one MCP server. `env` and `headers` values are sealed secrets."""

    name: str
    transport: McpTransport
    command: tuple[str, ...] = ()
    url: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    risky: bool = False

    def check(self) -> McpServerConfig:
        if not NAME.fullmatch(self.name) or SEPARATOR in self.name:
            raise McpServerInvalid(
                f"MCP server name {self.name!r}: 1-32 of a-z, 0-9, _ and -, starting with a "
                f"letter, without {SEPARATOR!r}"
            )
        if self.transport == "stdio" and (not self.command or not self.command[0].strip()):
            raise McpServerInvalid("a stdio MCP server needs a command")
        if self.transport == "http" and not (self.url or "").startswith(("http://", "https://")):
            raise McpServerInvalid("an http MCP server needs an http:// or https:// url")
        return self

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "transport": self.transport, "command": list(self.command),
            "url": self.url, "env": dict(self.env), "headers": dict(self.headers),
            "risky": self.risky,
        }  # fmt: skip

    @classmethod
    def of(cls, raw: dict[str, Any]) -> McpServerConfig:
        return cls(
            raw["name"], raw["transport"], tuple(raw.get("command") or ()), raw.get("url"),
            dict(raw.get("env") or {}), dict(raw.get("headers") or {}), bool(raw.get("risky")),
        )  # fmt: skip


class WorkspaceMcpServers(Aggregate):
    """The MCP servers of one workspace, by name."""

    @staticmethod
    def create_id(workspace_id: UUID) -> UUID:
        return uuid5(MCP_SERVERS_NAMESPACE, str(workspace_id))

    class Started(Aggregate.Created):
        workspace_id: UUID

    @event(Started)
    def __init__(self, workspace_id: UUID) -> None:
        self.workspace_id = workspace_id
        self.servers: dict[str, dict[str, Any]] = {}

    class Registered(Aggregate.Event):
        server: dict[str, Any]  # McpServerConfig.to_json(), secrets sealed
        by: UUID

        def apply(self, aggregate: Any) -> None:
            aggregate.servers[self.server["name"]] = self.server

    class Removed(Aggregate.Event):
        name: str
        by: UUID

        def apply(self, aggregate: Any) -> None:
            aggregate.servers.pop(self.name, None)

    class Resealed(Aggregate.Event):
        """A server's secret values sealed again, with the newest master key."""

        name: str
        env: dict[str, str]
        headers: dict[str, str]

        def apply(self, aggregate: Any) -> None:
            server = aggregate.servers[self.name]
            aggregate.servers[self.name] = {**server, "env": self.env, "headers": self.headers}

    def register(self, server: McpServerConfig, by: UUID) -> None:
        server.check()
        if server.name in self.servers:
            raise McpNameTaken(f"an MCP server named {server.name!r} is already registered")
        self.trigger_event(self.Registered, server=server.to_json(), by=by)

    def remove(self, name: str, by: UUID) -> None:
        if name not in self.servers:
            raise McpServerNotFound(f"no MCP server named {name!r} in this workspace")
        self.trigger_event(self.Removed, name=name, by=by)

    def reseal(self, name: str, env: dict[str, str], headers: dict[str, str]) -> None:
        server = self.servers.get(name)
        if server is None:
            raise McpServerNotFound(f"no MCP server named {name!r} in this workspace")
        if set(env) != set(server["env"]) or set(headers) != set(server["headers"]):
            raise McpServerInvalid("resealing changes no name, only how the values are sealed")
        self.trigger_event(self.Resealed, name=name, env=env, headers=headers)

    def configs(self) -> list[McpServerConfig]:
        return [McpServerConfig.of(s) for s in self.servers.values()]


McpServersEvent = (
    WorkspaceMcpServers.Started
    | WorkspaceMcpServers.Registered
    | WorkspaceMcpServers.Removed
    | WorkspaceMcpServers.Resealed
)
MCP_SERVERS_EVENT_CLASSES: tuple[type[McpServersEvent], ...] = (
    WorkspaceMcpServers.Started,
    WorkspaceMcpServers.Registered,
    WorkspaceMcpServers.Removed,
    WorkspaceMcpServers.Resealed,
)
