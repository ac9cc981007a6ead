"""The agent's own tools over MCP: each built-in tool as `agent__<name>`, run in a
session the caller may write in, as `POST /mcp/tools/{name}/execute` runs it.

A call goes through `ManualTools` like the REST route's: recorded in the session (the
model sees it), its arguments checked against the tool's own schema (a mismatch is a
recorded failure), and a risky tool waits for a human's approval under the session's
policy (the result then names the action to approve).
"""

from __future__ import annotations

import logging
from uuid import UUID

import msgspec
from mcp_types import Tool, ToolAnnotations

from adapters.http.errors import invalid
from adapters.http.routes.tools import execute_out
from adapters.mcp.server_bodies import output_schema
from adapters.mcp.server_call import Answer, Call
from application.tools.base import AnyTool
from application.tools.registry import ToolRegistry
from schemas.api import ToolExecuteOut

PREFIX = "agent__"
SESSION = "session_id"
SESSION_SCHEMA = {
    "type": "string",
    "format": "uuid",
    "description": "The session to run the tool in (one you may write in)",
}
log = logging.getLogger(__name__)


def agent_tools(registry: ToolRegistry) -> list[Tool]:
    """The MCP definitions of the registry's tools: each one's own input schema, plus
    the session to run it in."""
    out = output_schema(ToolExecuteOut)
    listed = []
    for tool in registry:
        spec = tool.spec()
        properties = spec.input_schema.get("properties", {})
        if not isinstance(properties, dict) or SESSION in properties:
            log.warning(
                "tool %s is not served over MCP: it has a %s of its own", spec.name, SESSION
            )
            continue
        required = spec.input_schema.get("required", [])
        schema = {
            **spec.input_schema,
            "properties": {**properties, SESSION: SESSION_SCHEMA},
            "required": [*(required if isinstance(required, list) else []), SESSION],
        }
        listed.append(
            Tool(
                name=PREFIX + spec.name,
                description=_description(tool),
                input_schema=schema,
                output_schema=out,
                annotations=ToolAnnotations(title=spec.name.replace("_", " ")),
            )
        )
    return listed


def _description(tool: AnyTool) -> str:
    if not tool.risky:
        return tool.description
    return (
        f"{tool.description} Under the session's default policy a human approves each "
        "call first: the result is then `confirm_required` with the action to approve."
    )


async def run_agent_tool(call: Call, tool: AnyTool, arguments: dict[str, object]) -> Answer:
    args = dict(arguments)
    try:
        session_id = msgspec.convert(args.pop(SESSION, None), UUID)
    except msgspec.ValidationError:
        raise invalid(SESSION, "required: the id of a session you may write in") from None
    api = call.api
    await api.access.session_workspace(call.user, session_id, write=True)
    await call.progress(f"tool {tool.name} called")
    outcome = await api.manual.execute(session_id, tool.name, args)
    out = execute_out(outcome, tool)  # as the REST route answers it
    match outcome.status:
        case "success":
            return Answer(outcome.result or "(no output)", out)
        case "confirm_required":
            text = (
                f"{tool.name} waits for a human's approval (action {outcome.action_id}): "
                f'POST /api/v1/hitl/{outcome.action_id}/confirm {{"approved": true}}'
            )
            return Answer(text, out)
        case status:
            return Answer(f"{tool.name} {status}: {outcome.error}", out, is_error=True)
