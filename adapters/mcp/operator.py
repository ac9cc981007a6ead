"""MCP servers the operator gives every workspace: a YAML list in the file
`TOKENDANCE_MCP_SERVERS` names, each entry with the fields of a registration."""

from __future__ import annotations

import functools
from pathlib import Path

import msgspec
import yaml

from domain.errors import InvalidValue
from domain.mcp_servers import McpServerConfig
from schemas.mcp import McpServerBody


def config_of(body: McpServerBody) -> McpServerConfig:
    """A registration's server, checked (`InvalidValue` saying what is wrong)."""
    command = body.command.split() if isinstance(body.command, str) else body.command or []
    return McpServerConfig(
        body.name, body.transport, tuple(command), body.url, dict(body.env), dict(body.headers),
        body.risky,
    ).check()  # fmt: skip


@functools.cache
def operator_servers(path: Path | None) -> tuple[McpServerConfig, ...]:
    """The file's servers; a file that does not load stops the start, saying why."""
    if path is None:
        return ()
    try:
        raw = yaml.safe_load(path.read_text()) or []
        bodies = msgspec.convert(raw, list[McpServerBody])
        return tuple(config_of(b) for b in bodies)
    except (OSError, yaml.YAMLError, msgspec.ValidationError, InvalidValue) as e:
        raise SystemExit(f"TOKENDANCE_MCP_SERVERS ({path}): {e}") from None
