"""What an MCP server registration is checked for, and how its secrets are kept."""

from __future__ import annotations

import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest

from adapters.config.secrets import SealBroken, Sealer
from adapters.mcp.client import McpUnreachable, tool_specs
from application.mcp_tools import McpToolSpec, SessionTools, check_tool_schema, mcp_tool
from application.tools.registry import ToolRegistry, ToolRejected
from domain.errors import InvalidValue
from domain.mcp_servers import McpServerConfig, McpServerInvalid, WorkspaceMcpServers
from tests.fakes.engine import tools_with


def test_a_sealed_secret_opens_only_with_its_key(tmp_path: Path) -> None:
    sealer = Sealer.from_settings(None, tmp_path)
    key_file = tmp_path / "master-key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    sealed = sealer.seal("s3cret")
    assert "s3cret" not in sealed and sealed != sealer.seal("s3cret")  # a fresh nonce each time
    assert Sealer.from_settings(None, tmp_path).unseal(sealed) == "s3cret"  # the kept key
    other = Sealer(b"\x01" * 32)
    with pytest.raises(SealBroken):
        other.unseal(sealed)
    with pytest.raises(SealBroken):
        sealer.unseal(sealed[:-4] + "AAAA")  # tampered with
    with pytest.raises(SystemExit, match="32 bytes"):
        Sealer.from_settings("c2hvcnQ=", tmp_path)


@pytest.mark.parametrize(
    "config",
    [
        McpServerConfig("Calc", "stdio", ("calc",)),
        McpServerConfig("a__b", "stdio", ("calc",)),
        McpServerConfig("calc", "stdio", ()),
        McpServerConfig("calc", "http", url="ftp://example.org/mcp"),
    ],
)
def test_a_registration_that_cannot_be_right_is_refused(config: McpServerConfig) -> None:
    with pytest.raises(McpServerInvalid):
        config.check()


def test_a_workspace_keeps_one_server_per_name() -> None:
    servers, by = WorkspaceMcpServers(workspace_id=uuid4()), uuid4()
    servers.register(McpServerConfig("calc", "stdio", ("calc",)), by)
    with pytest.raises(InvalidValue, match="already registered"):
        servers.register(McpServerConfig("calc", "http", url="http://x/mcp"), by)
    servers.remove("calc", by)
    assert servers.configs() == []


@dataclass
class ListedTool:
    name: str
    input_schema: Any
    description: str | None = "A tool."
    extra: dict[str, Any] = field(default_factory=dict)


CALC = McpServerConfig("calc", "stdio", ("calc",), risky=True)
OBJECT = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}


def test_tools_become_namespaced_specs_with_the_server_s_risk() -> None:
    (spec,) = tool_specs(CALC, [ListedTool("add", OBJECT)])
    assert spec.name == "calc__add" and spec.risky and spec.input_schema == OBJECT


@pytest.mark.parametrize(
    ("tools", "code"),
    [
        ([ListedTool("add", {"type": "object", "properties": {"a": {"type": 42}}})],
         "MCP_BAD_TOOL_SCHEMA"),
        ([ListedTool("add", {"type": "array"})], "MCP_BAD_TOOL_SCHEMA"),
        ([ListedTool("add two", OBJECT)], "MCP_BAD_TOOL_NAME"),
        ([ListedTool("add", OBJECT), ListedTool("add", OBJECT)], "MCP_NAME_TAKEN"),
    ],
)  # fmt: skip
def test_tools_the_model_cannot_be_given_are_refused(tools: list[ListedTool], code: str) -> None:
    with pytest.raises(McpUnreachable) as refused:
        tool_specs(CALC, tools)
    assert refused.value.code == code


def test_the_schema_check_names_the_problem() -> None:
    assert check_tool_schema(OBJECT) is None
    assert "not valid JSON Schema" in str(check_tool_schema({"type": "object", "required": 3}))


def test_a_call_is_checked_against_the_server_s_schema_before_it_runs() -> None:
    spec = McpToolSpec("calc", "add", "Add.", OBJECT, False)
    tools = SessionTools(ToolRegistry(tools_with()), [mcp_tool(spec, None, 5.0)])
    tool, args = tools.parse("calc__add", {"a": 2})
    assert tool.name == "calc__add" and args.arguments == {"a": 2}  # type: ignore[attr-defined]
    with pytest.raises(ToolRejected, match="'a' is a required property"):
        tools.parse("calc__add", {})
    with pytest.raises(ToolRejected, match="is not of type 'integer'"):
        tools.parse("calc__add", {"a": "two"})
    assert "calc__add" not in [s.name for s in tools.specs()]  # offered from the log only
