"""Chat: send a message (the run comes back as SSE), confirm, stop, working memory."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID

from litestar import Controller, get, post
from litestar.response import ServerSentEvent

from adapters.http.api import Api, Caller
from adapters.http.streaming import run_messages, sse
from domain.working_memory import WorkingMemory, fold_all, render
from schemas.api import ChatMessage, ConfirmBody, ConfirmOut, Document, StopOut, WorkingMemoryOut


class ChatController(Controller):
    path = "/api/v1/chat"
    tags = ["chat"]

    @post("/{session_id:uuid}/message", status_code=200)
    async def send_message(
        self, session_id: UUID, data: ChatMessage, request: Caller, api: Api
    ) -> ServerSentEvent:
        """Append the message, start a run, and stream it (SSE) until it ends or waits.

        With an `Idempotency-Key` already used in this session nothing is appended:
        the run that the first request started is streamed again, from its message.
        """
        await api.session(request.user, session_id, write=True)
        key = request.headers.get("idempotency-key")
        if key is not None:
            first = await api.call(_first_use, api, session_id, key)
            if first is not None:
                return sse(run_messages(api, session_id, *first))
        receipt = await api.engine.scheduler.send_message(
            session_id, data.content, attachments=data.attachments, idempotency_key=key
        )
        run_id = receipt.events[-1].__dict__["run_id"]
        return sse(run_messages(api, session_id, receipt.version - len(receipt.events), run_id))

    @post("/{session_id:uuid}/confirm", status_code=200)
    async def confirm(
        self, session_id: UUID, data: ConfirmBody, request: Caller, api: Api
    ) -> ConfirmOut:
        await api.session(request.user, session_id, write=True)
        receipt = await api.engine.scheduler.confirm(
            session_id, data.action_id, data.confirmed, data.feedback, str(request.user.user_id)
        )
        return ConfirmOut(
            request_id=data.action_id,
            approved=data.confirmed,
            user_feedback=data.feedback,
            responded_at=receipt.events[-1].timestamp if receipt.events else datetime.now(UTC),
            session_id=session_id,
        )

    @post("/{session_id:uuid}/stop", status_code=200)
    async def stop(self, session_id: UUID, request: Caller, api: Api) -> StopOut:
        await api.session(request.user, session_id, write=True)
        receipt = await api.engine.scheduler.stop(session_id)
        return StopOut(session_id=session_id, status="stopped", version=receipt.version)

    @get("/{session_id:uuid}/working-memory")
    async def working_memory(self, session_id: UUID, request: Caller, api: Api) -> WorkingMemoryOut:
        await api.session(request.user, session_id)
        memory = await api.call(api.memory_view.get, session_id)
        if memory is None:  # the read model is behind: render from the log itself
            events = await api.call(lambda: list(api.container.sessions.session_events(session_id)))
            memory = render(fold_all(events))  # type: ignore[arg-type]
        return _memory_out(session_id, memory)


def _first_use(api: Api, session_id: UUID, key: str) -> tuple[int, UUID] | None:
    """(version before the message, run id) of the message sent with `key`, if any."""
    after: int | None = None
    for e in api.container.sessions.session_events(session_id):
        kind = type(e).__name__
        if after is None and kind == "UserMessageAppended":
            if e.__dict__.get("idempotency_key") == key:
                after = e.originator_version - 1
        elif after is not None and kind == "RunRequested":
            return after, e.__dict__["run_id"]
    return None


def _memory_out(session_id: UUID, m: WorkingMemory) -> WorkingMemoryOut:
    updated = m.updated_at.isoformat() if m.updated_at else None
    common: dict[str, object] = {"version": m.version, "updated_at": updated}
    return WorkingMemoryOut(
        session_id=session_id,
        task_plan=Document(m.task_plan, {**common, "items_by_status": dict(m.plan_counts)}),
        findings=Document(
            m.findings,
            {
                **common,
                "findings": m.finding_count,
                "citations": m.citation_count,
                "sources": m.source_count,
            },
        ),
        progress=Document(m.progress, common),
    )
