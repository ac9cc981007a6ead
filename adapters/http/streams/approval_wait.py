"""A chat stream across a human approval: held open while the run waits, up to a limit.

The run's stream goes on past `confirm_required` (keep-alive comments while nobody
answers) and, once an answer comes through either confirm route, on to the tool's
result and `done`. If nobody answers within the wait (`TOKENDANCE_APPROVAL_WAIT`), the
stream ends with `done` status `waiting_confirmation`: the run stays suspended in the
log, and an answer given later resumes it (the session stream shows the rest). That
`done` is not a stored event: it carries the version the run waits at, and no SSE id.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from uuid import UUID

from litestar.response import ServerSentEventMessage

from adapters.http.streams.timed_reads import Ended, TimedOut, TimedReads
from application.bridge import SyncBridge
from application.sessions import SessionService
from schemas import sse

Waiting = Callable[[], Awaitable[sse.Done | None]]
# An answer restarts the clock: a turn may ask for several approvals, one by one.
CLOCK_EVENTS = {"confirm_required", "confirmed"}


async def across_approval(
    messages: AsyncIterator[ServerSentEventMessage], wait: float, waiting: Waiting
) -> AsyncIterator[ServerSentEventMessage]:
    """`messages`, ended `wait` seconds after a `confirm_required` if the run still waits."""
    loop = asyncio.get_running_loop()
    deadline: float | None = None
    reads = TimedReads(messages)
    try:
        while True:
            timeout = None if deadline is None else max(0.0, deadline - loop.time())
            message = await reads.next(timeout)
            if isinstance(message, Ended):
                return
            if isinstance(message, TimedOut):  # is the run still waiting for a human?
                deadline = None
                if (still := await waiting()) is not None:
                    yield unstored(still)
                    return
                continue
            yield message
            if message.event in CLOCK_EVENTS:
                deadline = loop.time() + wait
    finally:
        await reads.aclose()


def unstored(payload: sse.Done) -> ServerSentEventMessage:
    """An SSE message of a payload that is no stored event: no id."""
    return ServerSentEventMessage(data=sse.encode(payload).decode(), event=sse.event_type(payload))


def run_waiting(
    sessions: SessionService, bridge: SyncBridge, session_id: UUID, run_id: UUID
) -> Waiting:
    """A check: the `done` to end with if `run_id` still waits for an approval, else None."""

    async def check() -> sse.Done | None:
        session = await bridge(sessions.get_session, session_id)
        if session.active_run != run_id or not session.pending_confirmations:
            return None
        actions = ", ".join(sorted(session.pending_confirmations))
        message = session.run_message_id
        return sse.Done(
            version=session.version,
            timestamp=datetime.now(UTC),
            status="waiting_confirmation",
            message_id=None if message is None else str(message),
            tokens_used=session.run_tokens,
            run_id=run_id,
            reason=f"waiting for confirmation of {actions}; the run goes on once answered",
        )

    return check
