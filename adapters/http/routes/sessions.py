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
from adapters.http.reads.cursors import latest_first
from adapters.http.reads.session_messages import MAX_MESSAGES, active_skill, messages_of
from adapters.http.routes.artifacts import MAX_PAGE, artifact_page
from application.receipt import Receipt
from application.sessions import SessionService
from domain.events import SessionEvent
from domain.session import AgentSession
from domain.values import SessionSettings, check_thinking_budget
from projections.sessions import SessionSummary
from schemas.api import (
    ForkBody,
    MessagePage,
    SessionCreate,
    SessionDetails,
    SessionOut,
    SessionPage,
    SessionPatch,
    Status,
    Tokens,
)
from schemas.artifacts import ArtifactPage


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
        cursor: Annotated[str | None, QueryParameter(max_length=500)] = None,
        status: FromQuery[Status | None] = None,
    ) -> SessionPage:
        """A workspace's sessions, latest activity first; without `workspace_id`, the
        caller's in all of theirs. `cursor`: the `next_cursor` of the page before."""
        if workspace_id is not None:
            await api.access.workspace(request.user, workspace_id)
            scope: list[UUID] = [workspace_id]
        else:
            mine = await api.bridge(api.workspaces.workspaces_of, request.user)
            scope = [w.workspace_id for w in mine]
        position = latest_first(api.cursors.read("sessions", cursor))
        await api.waiter.caught_up("sessions")
        rows, total = await api.bridge(
            api.views.sessions.list_for_workspace, scope, status=status, limit=limit + 1,
            after=position,
        )  # fmt: skip
        taken, next_cursor = api.cursors.cut(
            "sessions", rows, limit, lambda r: (r.last_activity_at.isoformat(), str(r.session_id))
        )
        return SessionPage([_out(r) for r in taken], total, limit, next_cursor)

    @get("/{session_id:uuid}")
    async def get_session(
        self,
        session_id: FromPath[UUID],
        request: Caller,
        api: ApiDep,
        include_details: FromQuery[bool] = False,
        messages_limit: Annotated[int, QueryParameter(ge=1, le=MAX_MESSAGES)] = 50,
    ) -> SessionOut:
        """The session; with `include_details=true` also its active skill (`skill_id`),
        its last `messages_limit` messages, its artifacts and its own settings."""
        session = await api.access.session(request.user, session_id)
        out = await _summary(api, session)
        if include_details:
            events = await api.bridge(_events, api.sessions, session_id)
            out.skill_id = active_skill(events)
            out.messages = messages_of(session, events)[-messages_limit:]
            page = await artifact_page(api, [session.workspace_id], session_id, None, None, 1000)
            out.artifacts = page.items
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
        cursor: Annotated[str | None, QueryParameter(max_length=500)] = None,
    ) -> MessagePage:
        """The conversation, oldest first: its last `limit` messages, or the `limit`
        before `cursor` (the `next_cursor` of the page after, for scrolling back)."""
        session = await api.access.session(request.user, session_id)
        before = api.cursors.read("messages", cursor)
        events = await api.bridge(_events, api.sessions, session_id)
        every = messages_of(session, events)
        earlier = every if before is None else [m for m in every if m.version < int(before[0])]
        taken = earlier[-limit:]
        more = len(earlier) > len(taken)
        next_cursor = api.cursors.issue("messages", (taken[0].version,)) if more else None
        return MessagePage(taken, len(every), next_cursor)

    @get("/{session_id:uuid}/artifacts")
    async def list_session_artifacts(
        self,
        session_id: FromPath[UUID],
        request: Caller,
        api: ApiDep,
        limit: Annotated[int, QueryParameter(ge=1, le=MAX_PAGE)] = 50,
        cursor: Annotated[str | None, QueryParameter(max_length=500)] = None,
    ) -> ArtifactPage:
        """The session's artifacts in the order they were made, each at its latest
        version (as `GET /artifacts?session_id=` answers)."""
        workspace_id = await api.access.session_workspace(request.user, session_id)
        return await artifact_page(api, [workspace_id], session_id, None, cursor, limit)


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

    if await api.waiter.until("sessions", caught_up):
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
