"""A session's resumable event stream, its audit log, and its human-approval requests."""

from __future__ import annotations

from typing import Annotated, cast, get_args
from uuid import UUID

from litestar import Controller, get, post
from litestar.params import FromPath, JSONBody, QueryParameter
from litestar.response import ServerSentEvent

from adapters.http.contract.openapi import SseOperation
from adapters.http.deps import Api, ApiDep, Caller
from adapters.http.errors import ApiError, invalid
from adapters.http.routes.audit import EVENT_CLASSES, audit_event, verification_out
from adapters.http.routes.chat import confirm_out
from adapters.http.streams.stream_guard import permit, while_allowed
from adapters.http.streams.streaming import session_messages, sse_response
from application.audit_chain import audit
from application.sessions import SessionService
from domain.errors import NotFound, SessionNotFound
from domain.events import SessionEvent
from projections.confirmations import ConfirmationRow
from schemas.api import (
    AuditPage,
    AuditVerification,
    ConfirmOut,
    HitlConfirmBody,
    HitlRequestOut,
    HitlStatus,
)

HITL_STATUSES: tuple[str, ...] = get_args(HitlStatus)


class StreamController(Controller):
    path = "/api/v1/sessions"
    tags = ["stream"]

    @get("/{session_id:uuid}/stream", operation_class=SseOperation)
    async def stream(
        self,
        session_id: FromPath[UUID],
        request: Caller,
        api: ApiDep,
        last_event_id: Annotated[str | None, QueryParameter(name="last_event_id")] = None,
    ) -> ServerSentEvent:
        """Every stored event after `Last-Event-ID` (header or query), then live."""
        session = await api.access.session(request.user, session_id)
        raw = request.headers.get("last-event-id") or last_event_id
        messages = session_messages(api.feed, session_id, _after(raw, session.version))
        allowed = permit(api.access, request.user, session_id)
        return sse_response(while_allowed(messages, allowed))

    @get("/{session_id:uuid}/events")
    async def audit(
        self,
        session_id: FromPath[UUID],
        request: Caller,
        api: ApiDep,
        after: Annotated[int, QueryParameter(ge=0, le=2**62)] = 0,
        limit: Annotated[int, QueryParameter(ge=1, le=1000)] = 100,
        event_type: Annotated[str | None, QueryParameter(name="type", max_length=100)] = None,
        cursor: Annotated[str | None, QueryParameter(max_length=500)] = None,
    ) -> AuditPage:
        """The raw events in order, from after version `after` (an SSE id), filterable by
        type; `cursor` (the `next_cursor` of the page before) goes on from there."""
        position = api.cursors.read("events", cursor)
        after = after if position is None else int(position[0])
        await api.access.session_workspace(request.user, session_id)
        wanted = None if event_type is None else EVENT_CLASSES.get(event_type)
        if event_type is not None and wanted is None:
            raise invalid("type", f"no event type {event_type!r}")
        events = await api.bridge(_page, api.sessions, session_id, after, limit, wanted)
        versions = [e.originator_version for e in events]
        chain = await api.bridge(api.chain.hashes, session_id, versions)
        items = [audit_event(e, *chain.get(e.originator_version, (None, None))) for e in events]
        more = len(items) == limit
        next_cursor = api.cursors.issue("events", (items[-1].version,)) if more else None
        return AuditPage(items, next_cursor, limit)

    @get("/{session_id:uuid}/audit")
    async def verify_session(
        self,
        session_id: FromPath[UUID],
        request: Caller,
        api: ApiDep,
    ) -> AuditVerification:
        """The session's hash chain recomputed from its stored events: each event's hash is
        SHA-256(prev_hash || topic || version as 8 bytes big-endian || state). Names the
        first version that is missing, unhashed or altered."""
        await api.access.session_workspace(request.user, session_id)
        verdict = await api.bridge(audit, api.chain, session_id)
        if verdict is None:
            raise SessionNotFound(session_id)
        return verification_out(verdict)

    @get("/{session_id:uuid}/hitl/pending")
    async def pending(
        self,
        session_id: FromPath[UUID],
        request: Caller,
        api: ApiDep,
    ) -> list[HitlRequestOut]:
        """The questions waiting for an answer (read-your-writes: as the session has them)."""
        session = await api.access.session(request.user, session_id)
        rows: list[ConfirmationRow] = []

        async def caught_up() -> bool:
            rows[:] = await api.bridge(api.views.confirmations.pending, session_id)
            return {r.action_id for r in rows} == set(session.pending_confirmations)

        await api.waiter.until("confirmations", caught_up)
        return [_request_out(r) for r in rows]


class HitlController(Controller):
    path = "/api/v1/hitl"
    tags = ["hitl"]

    @get("/{request_id:str}")
    async def get_request(
        self,
        request_id: FromPath[str],
        request: Caller,
        api: ApiDep,
    ) -> HitlRequestOut:
        """A question or approval the agent asked, and its answer if it has one."""
        return _request_out(await _visible(api, request, request_id))

    @post("/{request_id:str}/confirm", status_code=200)
    async def confirm(
        self,
        request_id: FromPath[str],
        data: JSONBody[HitlConfirmBody],
        request: Caller,
        api: ApiDep,
    ) -> ConfirmOut:
        """Answer a pending question or approval by its request id."""
        row = await _visible(api, request, request_id, write=True)
        await api.access.approver(request.user, row.session_id)
        answer = await api.scheduler.answer(
            row.session_id, request_id, data.approved, data.user_feedback, str(request.user.user_id)
        )
        return confirm_out(
            row.session_id, request_id, data.approved, data.user_feedback, answer, api.tools
        )


async def _visible(
    api: Api, request: Caller, request_id: str, *, write: bool = False
) -> ConfirmationRow:
    """The request, once the confirmations view has it (it may just have been asked)."""
    found: list[ConfirmationRow] = []

    async def known() -> bool:
        row = await api.bridge(api.views.confirmations.get, request_id)
        found[:] = [row] if row is not None else []
        return row is not None

    if not await api.waiter.until("confirmations", known, timeout=1.0):
        raise NotFound(f"no confirmation request {request_id}")
    await api.access.session_workspace(request.user, found[0].session_id, write=write)
    return found[0]


def _request_out(r: ConfirmationRow) -> HitlRequestOut:
    return HitlRequestOut(
        request_id=r.action_id,
        session_id=r.session_id,
        operation=r.tool,
        description=r.description,
        context={"tool_call_id": r.tool_use_id, "args": r.args},
        created_at=r.created_at,
        status=_status(r.status),
        user_feedback=r.feedback,
        responded_at=r.responded_at,
    )


def _status(status: str) -> HitlStatus:
    if status not in HITL_STATUSES:
        raise ValueError(f"unknown confirmation status {status!r}")
    return cast(HitlStatus, status)


def _after(raw: str | None, version: int) -> int:
    if raw is None or raw == "":
        return 0
    try:
        after = int(raw)
    except ValueError:
        raise invalid("Last-Event-ID", f"a session version, not {raw[:40]!r}") from None
    if not 0 <= after <= version:
        raise ApiError(
            400, f"Last-Event-ID {after} is outside this session's versions 0..{version}"
        )
    return after


def _page(
    sessions: SessionService, session_id: UUID, after: int, limit: int,
    wanted: type[SessionEvent] | None,
) -> list[SessionEvent]:  # fmt: skip
    if wanted is None:
        return list(sessions.session_events(session_id, after=after, limit=limit))
    found: list[SessionEvent] = []
    for e in sessions.session_events(session_id, after=after):
        if isinstance(e, wanted):
            found.append(e)
            if len(found) == limit:
                break
    return found
