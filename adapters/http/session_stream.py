"""A session's resumable event stream, its audit log, and its human-approval requests."""

from __future__ import annotations

import asyncio
from typing import Annotated
from uuid import UUID

from eventsourcing.domain import AggregateEvent
from litestar import Controller, get, post
from litestar.params import Parameter
from litestar.response import ServerSentEvent

from adapters.http.api import Api, Caller
from adapters.http.errors import ApiError
from adapters.http.streaming import session_messages, sse
from domain.errors import NotFound
from projections.confirmations import ConfirmationRow
from schemas.api import AuditEvent, AuditPage, ConfirmOut, HitlConfirmBody, HitlRequestOut

HIDDEN = {"originator_id", "originator_version", "timestamp"}


class StreamController(Controller):
    path = "/api/v1/sessions"
    tags = ["stream"]

    @get("/{session_id:uuid}/stream")
    async def stream(
        self,
        session_id: UUID,
        request: Caller,
        api: Api,
        last_event_id: Annotated[str | None, Parameter(query="last_event_id")] = None,
    ) -> ServerSentEvent:
        """Every stored event after `Last-Event-ID` (header or query), then live."""
        session = await api.session(request.user, session_id)
        after = _last_event_id(
            request.headers.get("last-event-id") or last_event_id, session.version
        )
        return sse(session_messages(api, session_id, after))

    @get("/{session_id:uuid}/events")
    async def audit(
        self,
        session_id: UUID,
        request: Caller,
        api: Api,
        after: Annotated[int, Parameter(ge=0, le=2**62)] = 0,
        limit: Annotated[int, Parameter(ge=1, le=1000)] = 100,
        event_type: Annotated[str | None, Parameter(query="type", max_length=100)] = None,
    ) -> AuditPage:
        """The raw events, paginated by version (`after`), filterable by type."""
        await api.session(request.user, session_id)
        events = await api.call(_page, api, session_id, after, limit, event_type)
        items = [
            AuditEvent(
                version=e.originator_version,
                type=type(e).__name__,
                timestamp=e.timestamp,
                payload={k: v for k, v in e.__dict__.items() if k not in HIDDEN},
            )
            for e in events
        ]
        next_after = items[-1].version if len(items) == limit else None
        return AuditPage(items, next_after, limit)

    @get("/{session_id:uuid}/hitl/pending")
    async def pending(self, session_id: UUID, request: Caller, api: Api) -> list[HitlRequestOut]:
        session = await api.session(request.user, session_id)
        rows = await api.call(api.confirmations_view.pending, session_id)
        if len(rows) != len(session.pending_confirmations):  # the read model is behind
            await asyncio.sleep(0.05)
            rows = await api.call(api.confirmations_view.pending, session_id)
        return [_request_out(r) for r in rows]


class HitlController(Controller):
    path = "/api/v1/hitl"
    tags = ["hitl"]

    @get("/{request_id:str}")
    async def get_request(self, request_id: str, request: Caller, api: Api) -> HitlRequestOut:
        return _request_out(await _visible(api, request, request_id))

    @post("/{request_id:str}/confirm", status_code=200)
    async def confirm(
        self, request_id: str, data: HitlConfirmBody, request: Caller, api: Api
    ) -> ConfirmOut:
        row = await _visible(api, request, request_id, write=True)
        receipt = await api.engine.scheduler.confirm(
            row.session_id, request_id, data.approved, data.user_feedback, str(request.user.user_id)
        )
        return ConfirmOut(
            request_id=request_id,
            approved=data.approved,
            user_feedback=data.user_feedback,
            responded_at=receipt.events[-1].timestamp,
            session_id=row.session_id,
        )


async def _visible(
    api: Api, request: Caller, request_id: str, *, write: bool = False
) -> ConfirmationRow:
    row = await api.call(api.confirmations_view.get, request_id)
    for _ in range(20):  # just asked for: the read model may be a moment behind
        if row is not None:
            break
        await asyncio.sleep(0.05)
        row = await api.call(api.confirmations_view.get, request_id)
    if row is None:
        raise NotFound(f"no confirmation request {request_id}")
    await api.session(request.user, row.session_id, write=write)
    return row


def _request_out(r: ConfirmationRow) -> HitlRequestOut:
    return HitlRequestOut(
        request_id=r.action_id,
        session_id=r.session_id,
        operation=r.tool,
        description=r.description,
        context={"tool_call_id": r.tool_use_id, "args": r.args},
        created_at=r.created_at,
        status=r.status,  # type: ignore[arg-type]
        user_feedback=r.feedback,
        responded_at=r.responded_at,
    )


def _last_event_id(raw: str | None, version: int) -> int:
    if raw is None or raw == "":
        return 0
    try:
        after = int(raw)
    except ValueError:
        raise ApiError(400, f"Last-Event-ID must be a session version, not {raw[:40]!r}") from None
    if not 0 <= after <= version:
        raise ApiError(
            400, f"Last-Event-ID {after} is outside this session's versions 0..{version}"
        )
    return after


def _page(
    api: Api, session_id: UUID, after: int, limit: int, event_type: str | None
) -> list[AggregateEvent]:
    sessions = api.container.sessions
    if event_type is None:
        return list(sessions.session_events(session_id, after=after, limit=limit))  # type: ignore[arg-type]
    found: list[AggregateEvent] = []
    for e in sessions.session_events(session_id, after=after):
        if type(e).__name__ == event_type:
            found.append(e)  # type: ignore[arg-type]
            if len(found) == limit:
                break
    return found
