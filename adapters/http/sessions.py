"""Sessions: create, list, read, rename, complete, archive, fork; messages and artifacts.

Commands answer from the session they wrote (the write side), never from a read
model; queries read the sessions view, waiting (on its NOTIFY) to see the session's
own latest version, and answer from the log when the view stays behind.
"""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from litestar import Controller, delete, get, patch, post
from litestar.params import FromPath, FromQuery, JSONBody, QueryParameter
from litestar.status_codes import HTTP_201_CREATED, HTTP_204_NO_CONTENT

from adapters.http.deps import Api, ApiDep, Caller
from adapters.http.sse import message_of, payloads
from application.receipt import Receipt
from application.sessions import SessionService
from domain.events import SessionEvent
from domain.session import AgentSession
from domain.values import SessionSettings, check_thinking_budget
from projections.sessions import SessionSummary
from schemas import sse
from schemas.api import (
    ForkBody,
    MessageOut,
    MessagePage,
    SessionCreate,
    SessionDetails,
    SessionOut,
    SessionPage,
    SessionPatch,
    Status,
    Tokens,
)


class SessionController(Controller):
    path = "/api/v1/sessions"
    tags = ["sessions"]

    @post("/", status_code=HTTP_201_CREATED)
    async def create_session(
        self,
        data: JSONBody[SessionCreate],
        request: Caller,
        api: ApiDep,
    ) -> SessionOut:
        """A new session in a workspace the caller may write in; its settings start from the
        workspace's."""
        workspace = await api.access.workspace_info(request.user, data.workspace_id, write=True)
        settings = _settings(data, workspace.settings, api.scheduler.runner.settings.max_tokens)
        receipt = await api.bridge(
            api.sessions.start_session,
            workspace_id=data.workspace_id,
            organization_id=workspace.organization_id,
            team_id=workspace.team_id,
            owner_id=request.user.user_id,
            title=data.title,
            task_type=data.task_type,
            model=settings.model or "",
            settings=settings,
        )
        return await _written(api, receipt)

    @get("/")
    async def list_sessions(
        self,
        request: Caller,
        api: ApiDep,
        workspace_id: FromQuery[UUID | None] = None,
        limit: Annotated[int, QueryParameter(ge=1, le=100)] = 20,
        offset: Annotated[int, QueryParameter(ge=0, le=1_000_000_000)] = 0,
        status: FromQuery[Status | None] = None,
    ) -> SessionPage:
        """A workspace's sessions; without `workspace_id`, the caller's in all of theirs."""
        if workspace_id is not None:
            await api.access.workspace(request.user, workspace_id)
            scope: list[UUID] = [workspace_id]
        else:
            mine = await api.bridge(api.workspaces.workspaces_of, request.user)
            scope = [w.workspace_id for w in mine]
        await api.views.waiter.caught_up("sessions")
        rows, total = await api.bridge(
            api.views.sessions.list_for_workspace, scope, status=status, limit=limit, offset=offset
        )
        return SessionPage([_out(r) for r in rows], total, limit, offset)

    @get("/{session_id:uuid}")
    async def get_session(
        self,
        session_id: FromPath[UUID],
        request: Caller,
        api: ApiDep,
        include_details: FromQuery[bool] = False,
    ) -> SessionOut:
        """The session; `include_details=true` adds its details."""
        session = await api.access.session(request.user, session_id)
        out = await _summary(api, session)
        if include_details:
            out.details = _details(session)
        return out

    @patch("/{session_id:uuid}")
    async def update_session(
        self,
        session_id: FromPath[UUID],
        data: JSONBody[SessionPatch],
        request: Caller,
        api: ApiDep,
    ) -> SessionOut:
        """Rename the session (`title`), or mark it `completed`."""
        session = await api.access.session(request.user, session_id, write=True)
        if data.title is not None:
            await api.bridge(api.sessions.rename_session, session_id, data.title)
        if data.status == "completed":
            await api.bridge(api.sessions.complete_session, session_id)
        if data.title is None and data.status is None:
            return _from_session(session)
        return _from_session(await api.bridge(api.sessions.get_session, session_id))

    @delete("/{session_id:uuid}", status_code=HTTP_204_NO_CONTENT)
    async def archive_session(
        self,
        session_id: FromPath[UUID],
        request: Caller,
        api: ApiDep,
    ) -> None:
        """Archive: the log stays whole; the session leaves the lists."""
        await api.access.session_workspace(request.user, session_id, write=True)
        await api.bridge(api.sessions.archive_session, session_id)

    @post("/{session_id:uuid}/complete", status_code=200)
    async def complete_session(
        self,
        session_id: FromPath[UUID],
        request: Caller,
        api: ApiDep,
    ) -> SessionOut:
        """Mark the session completed: it takes no more messages."""
        await api.access.session_workspace(request.user, session_id, write=True)
        return await _written(api, await api.bridge(api.sessions.complete_session, session_id))

    @post("/{session_id:uuid}/fork", status_code=HTTP_201_CREATED)
    async def fork_session(
        self,
        session_id: FromPath[UUID],
        data: JSONBody[ForkBody],
        request: Caller,
        api: ApiDep,
    ) -> SessionOut:
        """A new session holding this one's log up to `at_version`."""
        await api.access.session_workspace(request.user, session_id, write=True)
        receipt = await api.bridge(api.sessions.fork_session, session_id, data.at_version)
        return await _written(api, receipt)

    @get("/{session_id:uuid}/messages")
    async def messages(
        self,
        session_id: FromPath[UUID],
        request: Caller,
        api: ApiDep,
        limit: Annotated[int, QueryParameter(ge=1, le=1000)] = 100,
    ) -> MessagePage:
        """The session's last `limit` messages, oldest first."""
        await api.access.session_workspace(request.user, session_id)
        events = await api.bridge(_events, api.sessions, session_id)
        items = [_message_out(m) for m in map(message_of, events) if m is not None]
        return MessagePage(items[-limit:], len(items))

    @get("/{session_id:uuid}/artifacts")
    async def artifacts(
        self,
        session_id: FromPath[UUID],
        request: Caller,
        api: ApiDep,
    ) -> list[sse.Artifact]:
        """The session's `ArtifactCreated` events, as the SSE `artifact` payload has them."""
        await api.access.session_workspace(request.user, session_id)
        events = await api.bridge(_events, api.sessions, session_id)
        return [p for e in events for p in payloads(e) if isinstance(p, sse.Artifact)]


def _settings(
    data: SessionCreate, defaults: SessionSettings, max_tokens: int | None
) -> SessionSettings:
    """The session's settings: the workspace's defaults where the request sets none (all
    of them when it has no `settings`; its confirmation policy is then the workspace's).
    A thinking budget must fit in a turn's output limit (`max_tokens`, the server's)."""
    s = data.settings
    if s is None:
        return defaults
    tools = defaults.allowed_tools if s.allowed_tools is None else tuple(s.allowed_tools)
    if s.thinking_budget is not None:
        check_thinking_budget(s.thinking_budget, max_tokens)
    return SessionSettings(
        s.confirmation,
        tools,
        defaults.max_iterations if s.max_iterations is None else s.max_iterations,
        defaults.token_budget if s.token_budget is None else s.token_budget,
        defaults.model if s.model is None else s.model,
        defaults.thinking_budget if s.thinking_budget is None else s.thinking_budget,
    )


async def _written(api: Api, receipt: Receipt) -> SessionOut:
    """The session as the command left it: from the write side, never a read model."""
    return _from_session(await api.bridge(api.sessions.get_session, receipt.session_id))


async def _summary(api: Api, session: AgentSession) -> SessionOut:
    """The view's row once it shows the session's version; else what the log says."""
    found: list[SessionSummary] = []

    async def caught_up() -> bool:
        row = await api.bridge(api.views.sessions.get, session.id)
        found[:] = [row] if row is not None else []
        return row is not None and row.version >= session.version

    if await api.views.waiter.until("sessions", caught_up):
        return _out(found[0])
    return _from_session(session)


def _from_session(s: AgentSession) -> SessionOut:
    return SessionOut(
        id=s.id, workspace_id=s.workspace_id, title=s.title, status=s.status,
        task_type=s.task_type, created_at=s.created_on, updated_at=s.modified_on,
        version=s.version, active_run_id=s.active_run, archived=s.archived,
    )  # fmt: skip


def _out(r: SessionSummary) -> SessionOut:
    return SessionOut(
        id=r.session_id, workspace_id=r.workspace_id, title=r.title, status=r.status,
        task_type=r.task_type, created_at=r.created_at, updated_at=r.last_activity_at,
        version=r.version, message_count=r.message_count, tool_call_count=r.tool_call_count,
        failure_count=r.failure_count,
        tokens=Tokens(r.input_tokens, r.output_tokens, r.cache_read_tokens, r.cache_write_tokens),
        active_run_id=r.active_run, archived=r.archived,
    )  # fmt: skip


def _details(s: AgentSession) -> SessionDetails:
    return SessionDetails(
        owner_id=s.owner_id, model=s.model, settings=s.settings.to_json(), parent_id=s.parent_id,
        parent_version=s.parent_version, pending_confirmations=sorted(s.pending_confirmations),
    )  # fmt: skip


def _events(sessions: SessionService, session_id: UUID) -> list[SessionEvent]:
    return list(sessions.session_events(session_id))


def _message_out(m: sse.Message) -> MessageOut:
    return MessageOut(
        id=m.id, version=m.version, role=m.role, content=m.content, timestamp=m.timestamp,
        thinking=m.thinking, tool_calls=m.tool_calls or None, citations=m.citations,
        unresolved_citations=m.unresolved_citations,
    )  # fmt: skip
