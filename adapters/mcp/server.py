"""TokenDance as an MCP server (Streamable HTTP at `/mcp`), on the official `mcp` SDK.

Claude Desktop, an IDE or another agent delegates work to TokenDance with it: start a
session, send a message and get the final answer (progress as MCP progress
notifications while the run goes), read a session's working memory and artifacts,
search long-term memory, and run one of the agent's own tools in a session. Each call
acts as the caller of the HTTP request (a bearer access token or an API key, checked
by the API's authentication before the MCP layer sees the request) with the same role
checks as the REST routes, through the same application services.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any
from uuid import UUID

import msgspec
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from adapters.http.artifacts import artifact_page
from adapters.http.chat import memory_out
from adapters.http.deps import Api
from application.tokens import Principal
from domain.errors import DomainError
from domain.session import AgentSession as S
from domain.working_memory import fold_all
from domain.working_memory_render import render
from projections.artifacts import ArtifactsView
from projections.working_memory import WorkingMemoryView

ApiOf = Callable[[], Api]
RUN_ENDS = (S.RunCompleted, S.RunFailed, S.RunStopped)


def mcp_server(api_of: ApiOf) -> MCPServer:
    """The MCP server over the app's services (`api_of` gives them once the app runs)."""
    server = MCPServer(
        "tokendance",
        instructions=(
            "TokenDance runs an autonomous research agent with citations, slide decks, "
            "sandboxed code and long-term memory. Use send_message to give it a task and "
            "get its final answer; sessions keep their history."
        ),
    )

    async def caller(ctx: Context) -> tuple[Api, Principal]:
        api = api_of()
        headers = ctx.headers or {}
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            raise ToolError("UNAUTHORIZED: a bearer access token or API key is required")
        try:
            return api, await api.access.authenticate(token.strip())
        except Exception as e:
            raise ToolError(f"UNAUTHORIZED: {e}") from None

    async def guarded(work: Awaitable[Any]) -> Any:
        try:
            return await work
        except DomainError as e:
            raise ToolError(f"{e.code}: {e}") from None
        except ValueError as e:
            raise ToolError(f"VALIDATION_ERROR: {e}") from None

    @server.tool()
    async def start_session(
        ctx: Context, title: str = "New session", workspace_id: str | None = None
    ) -> dict[str, str]:
        """Start a session in a workspace (default: the caller's first); its id."""
        api, user = await caller(ctx)
        sid = await guarded(_start(api, user, title, workspace_id))
        return {"session_id": str(sid)}

    @server.tool()
    async def send_message(
        ctx: Context, message: str, session_id: str | None = None,
        workspace_id: str | None = None,
    ) -> dict[str, Any]:  # fmt: skip
        """Give the agent a message (a new session when no session_id) and wait for the
        run to end: the final answer, the session id and how the run ended. A run that
        waits for a human's approval returns at once with the action to approve."""
        api, user = await caller(ctx)
        return await guarded(_send(api, user, ctx, message, session_id, workspace_id))  # type: ignore[no-any-return]

    @server.tool()
    async def get_working_memory(ctx: Context, session_id: str) -> dict[str, Any]:
        """The session's task plan, findings and progress notes."""
        api, user = await caller(ctx)

        async def read() -> dict[str, Any]:
            sid = UUID(session_id)
            await api.access.session_workspace(user, sid)
            fresh = await api.views.waiter.caught_up(WorkingMemoryView.name)
            memory = await api.bridge(api.views.memory.get, sid) if fresh else None
            if memory is None:
                events = await api.bridge(lambda: list(api.sessions.session_events(sid)))
                memory = render(fold_all(events))
            return msgspec.to_builtins(memory_out(sid, memory))  # type: ignore[no-any-return]

        return await guarded(read())  # type: ignore[no-any-return]

    @server.tool()
    async def list_artifacts(ctx: Context, session_id: str) -> dict[str, Any]:
        """The session's artifacts (reports, decks, files), each with its download URL."""
        api, user = await caller(ctx)

        async def read() -> dict[str, Any]:
            sid = UUID(session_id)
            scope = [await api.access.session_workspace(user, sid)]
            page = await artifact_page(api, scope, sid, None, None, 100)
            return msgspec.to_builtins(page)  # type: ignore[no-any-return]

        return await guarded(read())  # type: ignore[no-any-return]

    @server.tool()
    async def search_memories(ctx: Context, query: str, limit: int = 5) -> dict[str, Any]:
        """Long-term memories the caller may read, best first, by meaning and keywords."""
        api, user = await caller(ctx)

        async def read() -> dict[str, Any]:
            namespaces = await api.memory.readable(user, None)
            hits = await api.memory.memories.search(query[:4000], namespaces, k=max(1, limit))
            items = [{"id": str(h.memory_id), "text": h.text, "category": h.category,
                      "score": round(h.score, 4)} for h in hits]  # fmt: skip
            return {"items": items}

        return await guarded(read())  # type: ignore[no-any-return]

    @server.tool()
    async def run_agent_tool(
        ctx: Context, session_id: str, tool: str, args: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Run one of the agent's own tools in a session the caller may write in, under
        the session's approval policy (`confirm_required` with an action id to approve).
        The tools: GET /api/v1/mcp/tools lists them with their schemas."""
        api, user = await caller(ctx)

        async def run() -> dict[str, Any]:
            sid = UUID(session_id)
            await api.access.session_workspace(user, sid, write=True)
            api.tools.get(tool)
            outcome = await api.manual.execute(sid, tool, args or {})
            return {"status": outcome.status, "result": outcome.result,
                    "error": outcome.error, "action_id": outcome.action_id}  # fmt: skip

        return await guarded(run())  # type: ignore[no-any-return]

    @server.resource(
        "tokendance://sessions/{session_id}/artifacts/{artifact_id}",
        name="artifact",
        description="A report, deck or file a session made (its latest version): text "
        "artifacts as text, others as bytes. list_artifacts gives each one's ids.",
    )
    async def artifact(session_id: str, artifact_id: str, ctx: Context) -> str | bytes:
        api, user = await caller(ctx)

        async def read() -> str | bytes:
            await api.access.session_workspace(user, UUID(session_id))
            await api.views.waiter.caught_up(ArtifactsView.name)
            row = await api.bridge(api.artifacts.view.get, UUID(artifact_id))
            if row is None or str(row.session_id) != session_id:
                raise ValueError(f"no artifact {artifact_id} in session {session_id}")
            data = await api.blobs.get(row.blob_ref)
            textual = row.media_type.startswith("text/") or row.media_type.endswith("json")
            return data.decode(errors="replace") if textual else data

        return await guarded(read())  # type: ignore[no-any-return]

    return server


async def _start(api: Api, user: Principal, title: str, workspace_id: str | None) -> UUID:
    if workspace_id is None:
        mine = await api.bridge(api.workspaces.workspaces_of, user)
        if not mine:
            raise ValueError("the caller has no workspace")
        workspace = mine[0].workspace_id
    else:
        workspace = UUID(workspace_id)
    info = await api.access.workspace_info(user, workspace, write=True)
    receipt = await api.bridge(
        api.sessions.start_session, workspace_id=workspace,
        organization_id=info.organization_id, team_id=info.team_id, owner_id=user.user_id,
        title=title[:200] or "New session", settings=info.settings,
    )  # fmt: skip
    return receipt.session_id


async def _send(
    api: Api, user: Principal, ctx: Context, message: str, session_id: str | None,
    workspace_id: str | None,
) -> dict[str, Any]:  # fmt: skip
    if session_id is None:
        sid = await _start(api, user, message[:60], workspace_id)
    else:
        sid = UUID(session_id)
    await api.access.session_workspace(user, sid, write=True)
    receipt = await api.scheduler.send_message(
        sid, message, requested_by=user.user_id, api_key_id=user.api_key_id
    )
    start = receipt.version
    run_id = next(e.run_id for e in receipt.events if isinstance(e, S.RunRequested))
    seen, step, answer = start, 0, ""
    while True:
        events = await api.bridge(_events_after, api, sid, seen)
        for e in events:
            seen = e.originator_version
            if isinstance(e, S.ToolCallRequested):
                step += 1
                await ctx.report_progress(step, None, f"tool {e.tool}")
            elif isinstance(e, S.AssistantTurnRecorded) and e.run_id == run_id:
                step += 1
                answer = "".join(str(b.get("text", "")) for b in e.content if b["type"] == "text")
                await ctx.report_progress(step, None, "the agent wrote a turn")
            elif isinstance(e, S.ConfirmationRequested):
                return {"session_id": str(sid), "status": "waiting_confirmation",
                        "action_id": e.action_id, "tool": e.tool,
                        "approve": f"POST /api/v1/hitl/{e.action_id}/confirm"}  # fmt: skip
            elif isinstance(e, RUN_ENDS) and e.run_id == run_id:
                return _ended(sid, e, answer)
        await asyncio.sleep(0.2)


def _ended(
    sid: UUID, end: S.RunCompleted | S.RunFailed | S.RunStopped, answer: str
) -> dict[str, Any]:
    status = {S.RunCompleted: "completed", S.RunFailed: "failed", S.RunStopped: "stopped"}
    out: dict[str, Any] = {"session_id": str(sid), "status": status[type(end)], "answer": answer}
    if isinstance(end, S.RunFailed):
        out["error_code"], out["error"] = end.error_code, end.reason
    return out


def _events_after(api: Api, sid: UUID, seen: int) -> list[Any]:
    return list(api.sessions.session_events(sid, after=seen))
