"""The tools the agent has, and running one by hand (the same approval rules apply)."""

from __future__ import annotations

from litestar import Controller, Response, get, post
from litestar.status_codes import HTTP_200_OK, HTTP_202_ACCEPTED

from adapters.http.api import Api, Caller
from application.tools.registry import ToolRejected
from domain.errors import NotFound
from schemas.api import ToolExecuteBody, ToolExecuteOut, ToolOut, ToolSchemaOut


class ToolController(Controller):
    path = "/api/v1/mcp/tools"
    tags = ["tools"]

    @get("/")
    async def list_tools(self, api: Api) -> list[ToolOut]:
        registry = api.engine.runner.tools
        return [
            ToolOut(s.name, s.description, registry.get(s.name).risky) for s in registry.specs()
        ]

    @get("/{name:str}/schema")
    async def schema(self, name: str, api: Api) -> ToolSchemaOut:
        tool = _tool(api, name)
        spec = tool.spec()
        return ToolSchemaOut(spec.name, spec.description, spec.input_schema, tool.risky)

    @post("/{name:str}/execute")
    async def execute(
        self, name: str, data: ToolExecuteBody, request: Caller, api: Api
    ) -> Response[ToolExecuteOut]:
        """Run a tool in a session by hand; 202 with an action id if it needs approval first."""
        _tool(api, name)
        await api.session(request.user, data.session_id, write=True)
        outcome = await api.engine.manual.execute(data.session_id, name, data.args)
        status = HTTP_202_ACCEPTED if outcome.status == "confirm_required" else HTTP_200_OK
        body = ToolExecuteOut(
            tool_call_id=outcome.tool_use_id,
            status=outcome.status,
            result=outcome.result,
            error=outcome.error,
            action_id=outcome.action_id,
        )
        return Response(body, status_code=status)


def _tool(api: Api, name: str):  # type: ignore[no-untyped-def]
    try:
        return api.engine.runner.tools.get(name)
    except ToolRejected:
        raise NotFound(f"no tool {name!r}") from None
