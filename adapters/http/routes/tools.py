"""The tools the agent has, and running one by hand (the same approval rules apply)."""

from __future__ import annotations

import msgspec
from litestar import Controller, Response, get, post
from litestar.openapi.datastructures import ResponseSpec
from litestar.params import FromPath, JSONBody
from litestar.status_codes import HTTP_200_OK, HTTP_202_ACCEPTED

from adapters.http.deps import ApiDep, Caller
from application.manual_tools import ManualOutcome
from application.tools.base import AnyTool
from application.tools.registry import ToolRegistry, ToolRejected
from domain.errors import NotFound
from schemas.api import ToolExecuteBody, ToolExecuteOut, ToolOut, ToolSchemaOut


class ToolController(Controller):
    path = "/api/v1/mcp/tools"
    tags = ["tools"]

    @get("/")
    async def list_tools(self, api: ApiDep) -> list[ToolOut]:
        """Every tool the agent has, and whether running it needs an approval."""
        registry = api.tools
        return [
            ToolOut(s.name, s.description, registry.get(s.name).risky) for s in registry.specs()
        ]

    @get("/{name:str}/schema")
    async def schema(self, name: FromPath[str], api: ApiDep) -> ToolSchemaOut:
        """A tool's JSON Schema for its `args`."""
        tool = _tool(api.tools, name)
        spec = tool.spec()
        return ToolSchemaOut(spec.name, spec.description, spec.input_schema, tool.risky)

    @post(
        "/{name:str}/execute",
        status_code=HTTP_200_OK,
        responses={
            HTTP_202_ACCEPTED: ResponseSpec(
                ToolExecuteOut,
                description="Waiting for an approval: `action_id` names it",
                generate_examples=False,
            )
        },
    )
    async def execute(
        self,
        name: FromPath[str],
        data: JSONBody[ToolExecuteBody],
        request: Caller,
        api: ApiDep,
    ) -> Response[ToolExecuteOut]:
        """Run a tool in a session by hand; 202 with an action id if it needs approval first.

        Approved (`POST /api/v1/chat/{session_id}/confirm` with that action id), it runs
        before the approval answers: the answer's `tool_result` is this route's answer.
        """
        tool = _tool(api.tools, name)
        await api.access.session_workspace(request.user, data.session_id, write=True)
        outcome = await api.manual.execute(data.session_id, name, data.args)
        status = HTTP_202_ACCEPTED if outcome.status == "confirm_required" else HTTP_200_OK
        return Response(execute_out(outcome, tool), status_code=status)


def execute_out(outcome: ManualOutcome, tool: AnyTool | None) -> ToolExecuteOut:
    """A call made by hand, as the execute route answers it (and a confirmation of one)."""
    json_output = tool is not None and tool.json_output
    return ToolExecuteOut(
        tool_call_id=outcome.tool_use_id,
        status=outcome.status,
        result=_output(outcome.result, json_output=json_output),
        error=outcome.error,
        action_id=outcome.action_id,
    )


def by_hand_out(outcome: ManualOutcome | None, tools: ToolRegistry) -> ToolExecuteOut | None:
    """The outcome of the call made by hand a confirmation answered, if it answered one."""
    if outcome is None:
        return None
    try:
        tool: AnyTool | None = tools.get(outcome.tool)
    except ToolRejected:  # an MCP tool gone since: its output as text
        tool = None
    return execute_out(outcome, tool)


def _output(result: str | None, *, json_output: bool) -> str | dict[str, object] | None:
    """A JSON tool's output as the object it is (its text if it is not one after all)."""
    if result is None or not json_output:
        return result
    try:
        decoded = msgspec.json.decode(result)
    except msgspec.DecodeError:
        return result
    return decoded if isinstance(decoded, dict) else result


def _tool(tools: ToolRegistry, name: str) -> AnyTool:
    try:
        return tools.get(name)
    except ToolRejected:
        raise NotFound(f"no tool {name!r}") from None
