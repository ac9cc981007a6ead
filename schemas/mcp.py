"""Wire formats of a workspace's MCP servers (`/api/v1/workspaces/{id}/mcp-servers`)."""

from __future__ import annotations

from typing import Literal

import msgspec


class McpServerBody(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    """An MCP server to register: a command to start (`stdio`) or a URL (`http`).

    `env` and `headers` values are secrets: kept sealed, never shown again."""

    name: str
    transport: Literal["stdio", "http"]
    command: list[str] | str | None = None  # argv, or one string split on spaces
    url: str | None = None
    env: dict[str, str] = msgspec.field(default_factory=dict)
    headers: dict[str, str] = msgspec.field(default_factory=dict)
    risky: bool = False  # every call of its tools then waits for an approval (policy risky)


class McpToolOut(msgspec.Struct, kw_only=True):
    name: str  # as the agent sees it: `server__tool`
    description: str
    risky: bool


class McpServerOut(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A registered server: secret names only, never their values."""

    name: str
    transport: Literal["stdio", "http"]
    command: list[str] | None = None
    url: str | None = None
    env_names: list[str] = msgspec.field(default_factory=list)
    header_names: list[str] = msgspec.field(default_factory=list)
    risky: bool = False
    source: Literal["workspace", "operator"] = "workspace"
    tools: list[McpToolOut] | None = None  # as the server listed them when registered
