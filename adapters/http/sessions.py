"""Sessions: create, list, read, rename, complete, archive, fork; messages and artifacts."""

from __future__ import annotations

from typing import Annotated
from uuid import UUID

from eventsourcing.domain import AggregateEvent
from litestar import Controller, delete, get, patch, post
from litestar.params import Parameter
from litestar.status_codes import HTTP_201_CREATED, HTTP_204_NO_CONTENT

from adapters.http.api import Api, Caller
from application.sessions import Receipt
from domain.session import AgentSession
from projections.sessions import SessionSummary
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
    async def create_session(self, data: SessionCreate, request: Caller, api: Api) -> SessionOut:
        await api.workspace(request.user, data.workspace_id, write=True)
        settings = _settings(data)
        receipt = await api.call(
            api.container.sessions.start_session,
            workspace_id=data.workspace_id,
            owner_id=request.user.user_id,
            title=data.title,
            task_type=data.task_type,
            model=str(settings.get("model", "")),
            settings=settings,
        )
        return await _written(api, receipt)

    @get("/")
    async def list_sessions(
        self,
        request: Caller,
        api: Api,
        workspace_id: UUID,
        limit: Annotated[int, Parameter(ge=1, le=100)] = 20,
        offset: Annotated[int, Parameter(ge=0, le=1_000_000_000)] = 0,
        status: Status | None = None,
    ) -> SessionPage:
        await api.workspace(request.user, workspace_id)
        rows, total = await api.call(
            api.sessions_view.list_for_workspace,
            workspace_id,
            status=status,
            limit=limit,
            offset=offset,
        )
        return SessionPage([_out(r) for r in rows], total, limit, offset)

    @get("/{session_id:uuid}")
    async def get_session(
        self, session_id: UUID, request: Caller, api: Api, include_details: bool = False
    ) -> SessionOut:
        session = await api.session(request.user, session_id)
        out = await _session_out(api, session_id, session)
        if include_details:
            out.details = _details(session)
        return out

    @patch("/{session_id:uuid}")
    async def update_session(
        self, session_id: UUID, data: SessionPatch, request: Caller, api: Api
    ) -> SessionOut:
        await api.session(request.user, session_id, write=True)
        sessions = api.container.sessions
        receipt = None
        if data.title is not None:
            receipt = await api.call(sessions.rename_session, session_id, data.title)
        if data.status == "completed":
            receipt = await api.call(sessions.complete_session, session_id)
        if receipt is not None:
            await api.wait_for(receipt.notification_id, "sessions")
        return await _session_out(api, session_id)

    @delete("/{session_id:uuid}", status_code=HTTP_204_NO_CONTENT)
    async def archive_session(self, session_id: UUID, request: Caller, api: Api) -> None:
        """Archive: the log stays whole; the session leaves the lists."""
        await api.session(request.user, session_id, write=True)
        receipt = await api.call(api.container.sessions.archive_session, session_id)
        await api.wait_for(receipt.notification_id, "sessions")

    @post("/{session_id:uuid}/complete", status_code=200)
    async def complete_session(self, session_id: UUID, request: Caller, api: Api) -> SessionOut:
        await api.session(request.user, session_id, write=True)
        receipt = await api.call(api.container.sessions.complete_session, session_id)
        return await _written(api, receipt)

    @post("/{session_id:uuid}/fork", status_code=HTTP_201_CREATED)
    async def fork_session(
        self, session_id: UUID, data: ForkBody, request: Caller, api: Api
    ) -> SessionOut:
        """A new session holding this one's log up to `at_version`."""
        await api.session(request.user, session_id, write=True)
        receipt = await api.call(api.container.sessions.fork_session, session_id, data.at_version)
        return await _written(api, receipt)

    @get("/{session_id:uuid}/messages")
    async def messages(
        self,
        session_id: UUID,
        request: Caller,
        api: Api,
        limit: Annotated[int, Parameter(ge=1, le=1000)] = 100,
    ) -> MessagePage:
        await api.session(request.user, session_id)
        events = await api.call(_events, api, session_id)
        items = [m for m in map(_message, events) if m is not None]
        return MessagePage(items[-limit:], len(items))

    @get("/{session_id:uuid}/artifacts")
    async def artifacts(
        self, session_id: UUID, request: Caller, api: Api
    ) -> list[dict[str, object]]:
        await api.session(request.user, session_id)
        events = await api.call(_events, api, session_id)
        return [
            {**e.__dict__, "version": e.originator_version}
            for e in events
            if type(e).__name__ == "ArtifactCreated"
        ]


def _settings(data: SessionCreate) -> dict[str, object]:
    if data.settings is None:
        return {}
    s = data.settings
    raw = {
        "confirmation": s.confirmation,
        "allowed_tools": s.allowed_tools,
        "max_iterations": s.max_iterations,
        "token_budget": s.token_budget,
        "model": s.model,
    }
    return {k: v for k, v in raw.items() if v is not None}


async def _written(api: Api, receipt: Receipt) -> SessionOut:
    """The session as the read model shows it once it has applied this write."""
    await api.wait_for(receipt.notification_id, "sessions")
    return await _session_out(api, receipt.session_id)


async def _session_out(
    api: Api, session_id: UUID, session: AgentSession | None = None
) -> SessionOut:
    row = await api.call(api.sessions_view.get, session_id)
    if row is None:  # the read model is behind: answer from the log itself
        if session is None:
            session = await api.call(api.container.sessions.get_session, session_id)
        return SessionOut(
            id=session.id,
            workspace_id=session.workspace_id,
            title=session.title,
            status=session.status,
            task_type=session.task_type,
            created_at=session.created_on,
            updated_at=session.modified_on,
            version=session.version,
            active_run_id=session.active_run,
        )
    return _out(row)


def _out(r: SessionSummary) -> SessionOut:
    return SessionOut(
        id=r.session_id,
        workspace_id=r.workspace_id,
        title=r.title,
        status=r.status,
        task_type=r.task_type,
        created_at=r.created_at,
        updated_at=r.last_activity_at,
        version=r.version,
        message_count=r.message_count,
        tool_call_count=r.tool_call_count,
        failure_count=r.failure_count,
        tokens=Tokens(r.input_tokens, r.output_tokens, r.cache_read_tokens, r.cache_write_tokens),
        active_run_id=r.active_run,
    )


def _details(s: AgentSession) -> SessionDetails:
    return SessionDetails(
        owner_id=s.owner_id,
        model=s.model,
        settings=dict(s.settings),
        parent_id=s.parent_id,
        parent_version=s.parent_version,
        pending_confirmations=sorted(s.pending_confirmations),
    )


def _events(api: Api, session_id: UUID) -> list[AggregateEvent]:
    return list(api.container.sessions.session_events(session_id))  # type: ignore[arg-type]


def _message(e: AggregateEvent) -> MessageOut | None:
    d = e.__dict__
    kind = type(e).__name__
    if kind == "UserMessageAppended":
        return MessageOut(e.originator_version, "user", d["text"], e.timestamp)
    if kind == "AssistantTurnRecorded":
        blocks = d["content"]
        text = "".join(b["text"] for b in blocks if b["type"] == "text")
        thinking = "".join(b["thinking"] for b in blocks if b["type"] == "thinking") or None
        calls = [
            {"id": b["id"], "name": b["name"], "args": b["input"]}
            for b in blocks
            if b["type"] == "tool_use"
        ]
        return MessageOut(
            e.originator_version, "assistant", text, e.timestamp, thinking, calls or None
        )  # type: ignore[attr-defined]
    return None
