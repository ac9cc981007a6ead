"""A session's conversation as message resources: each assistant message with its tool
calls and how each ended, and each call made by hand as the user's, read from the log
(`GET /sessions/{id}/messages`, details)."""

from __future__ import annotations

from collections.abc import Sequence

from adapters.http.streams.sse import message_of
from domain.events import SessionEvent
from domain.session import AgentSession
from domain.session import AgentSession as S
from domain.values import MANUAL_PREFIX
from schemas import sse
from schemas.api import MessageOut, ToolCallOut, ToolCallStatus

MAX_MESSAGES = 10_000  # the most messages one answer lists


def messages_of(session: AgentSession, events: Sequence[SessionEvent]) -> list[MessageOut]:
    """Every message of the conversation, oldest first."""
    results = {e.tool_use_id: e for e in events if isinstance(e, S.ToolResultRecorded)}
    waiting = set(session.pending_confirmations.values())
    running = session.active_run is not None

    def call_out(use: sse.ToolUse) -> ToolCallOut:
        found = results.get(use.id)
        if found is None:
            status: ToolCallStatus = "running" if running and use.id not in waiting else "pending"
            return ToolCallOut(id=use.id, name=use.name, args=use.args, status=status)
        return ToolCallOut(
            id=use.id, name=use.name, args=use.args,
            status="cancelled" if found.status == "interrupted" else found.status,
            result=found.summary or None, error=found.error, duration_ms=found.duration_ms,
        )  # fmt: skip

    def message_out(m: sse.Message) -> MessageOut:
        return MessageOut(
            id=m.id, session_id=session.id, version=m.version, role=m.role, content=m.content,
            created_at=m.timestamp, tool_calls=[call_out(u) for u in m.tool_calls or ()],
            citations=m.citations or [], thinking=m.thinking,
            unresolved_citations=m.unresolved_citations, attachments=m.attachments or None,
        )  # fmt: skip

    def by_hand(e: S.ToolCallRequested) -> MessageOut:
        """A call made by hand: the user's, as the model's context has it."""
        use = sse.ToolUse(id=e.tool_use_id, name=e.tool, args=e.args)
        return MessageOut(
            id=str(e.originator_version), session_id=session.id, version=e.originator_version,
            role="user", content="", created_at=e.timestamp, tool_calls=[call_out(use)],
        )  # fmt: skip

    listed = []
    for e in events:
        m = message_of(e)
        if m is not None:
            listed.append(message_out(m))
        elif isinstance(e, S.ToolCallRequested) and e.tool_use_id.startswith(MANUAL_PREFIX):
            listed.append(by_hand(e))
    return listed


def active_skill(events: Sequence[SessionEvent]) -> str | None:
    """The name of the skill the session last activated, as its SKILL.md writes it."""
    names = [e.name for e in events if isinstance(e, S.SkillActivated)]
    return names[-1] if names else None
