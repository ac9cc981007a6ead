"""Chat: send a message (the run comes back as SSE), confirm, stop, working memory."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import UUID

from litestar import Controller, get, post
from litestar.params import FromPath, JSONBody
from litestar.response import ServerSentEvent

from adapters.http.contract.openapi import SseOperation
from adapters.http.deps import ApiDep, Caller
from adapters.http.middleware.idempotency import new_key
from adapters.http.routes.tools import by_hand_out
from adapters.http.routes.uploads import check_attachments
from adapters.http.streams.approval_wait import across_approval, run_waiting
from adapters.http.streams.stream_guard import permit, while_allowed
from adapters.http.streams.streaming import run_messages, sse_response
from application.attachments import attach
from application.runs import Answer
from application.sessions import SessionService
from application.tools.registry import ToolRegistry
from domain.events import SessionEvent
from domain.session import AgentSession as S
from domain.working_memory import WorkingMemory, fold_all
from domain.working_memory_render import render
from projections.working_memory import WorkingMemoryView
from schemas.api import (
    ChatMessage,
    ConfirmBody,
    ConfirmOut,
    Document,
    FileAttachment,
    StopOut,
    WorkingMemoryOut,
)


class ChatController(Controller):
    path = "/api/v1/chat"
    tags = ["chat"]

    @post("/{session_id:uuid}/message", status_code=200, operation_class=SseOperation)
    async def send_message(
        self,
        session_id: FromPath[UUID],
        data: JSONBody[ChatMessage],
        request: Caller,
        api: ApiDep,
    ) -> ServerSentEvent:
        """Append the message, start a run, and stream it (SSE) until it ends.

        While the run waits for a human the stream stays open (keep-alives) and goes on
        once the action is answered (either confirm route), for at most
        `TOKENDANCE_APPROVAL_WAIT` seconds; then it ends with `done` status
        `waiting_confirmation` (the run stays suspended and resumable). With an
        `Idempotency-Key` already used in this session nothing is appended: the run
        that the first request started is streamed again, from its message.
        """
        workspace_id = await api.access.session_workspace(request.user, session_id, write=True)
        key = request.headers.get("idempotency-key")
        first = (  # a key never claimed before has no message under it: nothing to look for
            None
            if key is None or new_key(request.scope)
            else await api.bridge(_first_use, api.sessions, session_id, key)
        )
        written: tuple[SessionEvent, ...] = ()  # what the message wrote: not read back
        if first is None:
            uploads = [a for a in data.attachments if isinstance(a, str)]
            file_ids = [a.file_id for a in data.attachments if isinstance(a, FileAttachment)]
            await check_attachments(api.uploads, api.bridge, session_id, uploads)
            attached = await attach(api.workspace_files, api.blobs, workspace_id, file_ids)
            receipt = await api.scheduler.send_message(
                session_id, data.content, attachments=uploads, idempotency_key=key,
                files=attached, requested_by=request.user.user_id,
                api_key_id=request.user.api_key_id,
            )  # fmt: skip
            first = receipt.version - len(receipt.events), receipt.requested_run()
            written = receipt.events
        after, run_id = first
        wait = api.approval_wait
        messages = run_messages(api.feed, session_id, after, run_id, written)
        waiting = run_waiting(api.sessions, api.bridge, session_id, run_id)
        allowed = permit(api.access, request.user, session_id)
        return sse_response(while_allowed(across_approval(messages, wait, waiting), allowed))

    @post("/{session_id:uuid}/confirm", status_code=200)
    async def confirm(
        self,
        session_id: FromPath[UUID],
        data: JSONBody[ConfirmBody],
        request: Caller,
        api: ApiDep,
    ) -> ConfirmOut:
        """Answer a pending action; `status` and `next_action` say what the run does next.

        A chat stream that is waiting on this action goes on to the tool's result. A member
        answers the runs their own messages started; an admin or owner any.
        """
        await api.access.approver(request.user, session_id)
        answer = await api.scheduler.answer(
            session_id, data.action_id, data.confirmed, data.feedback, str(request.user.user_id)
        )
        return confirm_out(
            session_id, data.action_id, data.confirmed, data.feedback, answer, api.tools
        )

    @post("/{session_id:uuid}/stop", status_code=200)
    async def stop(
        self,
        session_id: FromPath[UUID],
        request: Caller,
        api: ApiDep,
    ) -> StopOut:
        """Stop the session's run: its running model call and tools end; what it wrote stays."""
        await api.access.session_workspace(request.user, session_id, write=True)
        receipt = await api.scheduler.stop(session_id)
        return StopOut(session_id=session_id, status="stopped", version=receipt.version)

    @get("/{session_id:uuid}/working-memory")
    async def working_memory(
        self,
        session_id: FromPath[UUID],
        request: Caller,
        api: ApiDep,
    ) -> WorkingMemoryOut:
        """The session's working memory: its task plan, findings and progress."""
        await api.access.session_workspace(request.user, session_id)
        # Read-your-writes: the view, once it has what the log held when asked (a plan
        # or a note just streamed); if it is further behind than a query waits, the log.
        fresh = await api.waiter.caught_up(WorkingMemoryView.name)
        memory = await api.bridge(api.views.working_memory.get, session_id) if fresh else None
        if memory is None:  # the read model is behind: render from the log itself
            events = await api.bridge(lambda: list(api.sessions.session_events(session_id)))
            memory = render(fold_all(events))
        return memory_out(session_id, memory)


def confirm_out(
    session_id: UUID,
    action_id: str,
    approved: bool,
    feedback: str | None,
    answer: Answer,
    tools: ToolRegistry,
) -> ConfirmOut:
    """The answer of both confirm routes (`/chat/{id}/confirm`, `/hitl/{id}/confirm`);
    for a call made by hand, its outcome (it has run, or was cancelled, by now)."""
    events = answer.receipt.events
    return ConfirmOut(
        request_id=action_id,
        approved=approved,
        user_feedback=feedback,
        responded_at=events[-1].timestamp if events else datetime.now(UTC),
        session_id=session_id,
        status="confirmed" if approved else "rejected",
        next_action=answer.next_action,
        tool_result=by_hand_out(answer.by_hand, tools),
    )


def _first_use(sessions: SessionService, session_id: UUID, key: str) -> tuple[int, UUID] | None:
    """(version before the message, run id) of the message sent with `key`, if any."""
    after: int | None = None
    for e in sessions.session_events(session_id):
        match e:
            case S.UserMessageAppended(idempotency_key=used) if after is None and used == key:
                after = e.originator_version - 1
            case S.RunRequested(run_id=run_id) if after is not None:
                return after, run_id
            case _:
                continue
    return None


def memory_out(session_id: UUID, m: WorkingMemory) -> WorkingMemoryOut:
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
