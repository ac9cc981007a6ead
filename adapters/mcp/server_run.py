"""`send_message` over MCP: the message goes in as `POST /chat/{id}/message` sends it,
then the run is followed on the session's feed (the chat stream's source) to its end.

What happens on the way becomes MCP progress notifications (a tool running, a finding,
the answer's text as it streams); a run that stops to wait for a human returns at once
with the action to approve, rather than holding the call open. The call follows the run
only while its caller may still see the session (a revoked key ends it, as it ends an
SSE stream), and until this server shuts down; the run itself goes on either way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import assert_never
from uuid import UUID

from adapters.http.streams.sse_turns import cited_sources, marked_text
from adapters.http.streams.stream_guard import permit, while_allowed
from adapters.mcp.server_bodies import MadeOut, RunOut, RunStatus, SendMessageIn
from adapters.mcp.server_call import Answer, Call
from adapters.mcp.server_tools import start
from adapters.mcp.server_uris import artifact_uri
from adapters.nats.session_feed import Idle, Live, Stored
from domain.conversation import (
    LiveItem,
    TextDelta,
    ThinkingDelta,
    ThinkingStarted,
    ToolProgress,
    ToolRunning,
)
from domain.errors import NotFound
from domain.events import SessionEvent
from domain.session import AgentSession as S
from schemas.sse import Citation

TEXT_EVERY = 200  # characters of streamed answer text per progress notification
SHOWN = 300  # characters of a finding or note a progress notification shows


class Unavailable(Exception):
    """The server is shutting down while a run is followed (the run goes on)."""

    code = "UNAVAILABLE"


async def send_message(call: Call, body: SendMessageIn) -> Answer:
    api, user = call.api, call.user
    sid = body.session_id
    if sid is None:
        sid = (await start(call, _title(body.message), body.workspace_id)).session_id
    await api.access.session_workspace(user, sid, write=True)
    receipt = await api.scheduler.send_message(
        sid, body.message, requested_by=user.user_id, api_key_id=user.api_key_id
    )
    run = RunProgress(sid, receipt.requested_run())
    out = await _follow(call, run, after=receipt.version - len(receipt.events))
    return Answer(run_text(out), out)


async def _follow(call: Call, run: RunProgress, after: int) -> RunOut:
    api, sid = call.api, run.session_id
    allowed = permit(api.access, call.user, sid)
    async for item in while_allowed(api.feed.read(sid, after), allowed):
        match item:
            case Live(delta=delta):
                said = run.live(delta)
            case Stored(event=event):
                said = run.stored(event)
                if run.outcome is not None:
                    return run.outcome
            case Idle():
                said = []
        for words in said:
            await call.progress(words)
    if not await allowed():
        raise NotFound(f"session {sid} not found")  # as the caller now sees it
    raise Unavailable(
        f"the server is shutting down; the run goes on: follow it with GET "
        f"/api/v1/sessions/{sid}/stream or send_message again later"
    )


@dataclass
class RunProgress:
    """One run as an MCP client hears of it: progress in words, then how it ended."""

    session_id: UUID
    run_id: UUID
    outcome: RunOut | None = None
    answer: str = ""
    citations: list[Citation] = field(default_factory=list)
    tools: dict[str, str] = field(default_factory=dict)  # tool use id -> tool name
    streamed: str = ""  # answer text streamed since the last notification

    def live(self, delta: LiveItem) -> list[str]:
        match delta:
            case TextDelta(text=text):
                self.streamed += text
                return self._text() if len(self.streamed) >= TEXT_EVERY else []
            case ThinkingStarted():
                return [*self._text(), "thinking"]
            case ThinkingDelta():
                return []
            case ToolRunning(tool_use_id=tid, name=name):
                return [*self._text(), *self._started(tid, name)]
            case ToolProgress(tool_use_id=tid, message=message):
                return [*self._text(), f"tool {self.tools.get(tid, 'call')}: {message}"]
            case _:
                assert_never(delta)

    def stored(self, e: SessionEvent) -> list[str]:
        """Progress for a stored event; sets `outcome` when the run ends or waits."""
        said = self._text()
        match e:
            case S.ToolCallRequested(tool_use_id=tid, tool=tool):
                said += self._started(tid, tool)
            case S.ToolResultRecorded(tool_use_id=tid, status=status):
                said.append(f"tool {self.tools.get(tid, 'call')}: {status}")
            case S.PlanUpdated(items=items):
                done = sum(1 for i in items if i.status == "done")
                said.append(f"plan: {done} of {len(items)} steps done")
            case S.FindingRecorded(text=text):
                said.append(f"finding: {text[:SHOWN]}")
            case S.ProgressNoted(text=text):
                said.append(text[:SHOWN])
            case S.ArtifactCreated(kind=kind, name=name):
                said.append(f"{kind} {name} made")
            case S.ModelFallbackUsed(from_model=failed, to_model=model):
                said.append(f"model {failed} unavailable: {model} takes over")
            case S.AssistantTurnRecorded(run_id=run_id) if run_id == self.run_id:
                self.answer = marked_text(e.content, e.citations)
                self.citations = cited_sources(e.citations)
            case S.ConfirmationRequested():
                self.outcome = self._waiting(e)
            case (
                S.RunCompleted(run_id=run_id)
                | S.RunStopped(run_id=run_id)
                | S.RunFailed(run_id=run_id)
            ) if run_id == self.run_id:
                self.outcome = self._ended(e)
            case _:
                pass
        return said

    def _started(self, tool_use_id: str, name: str) -> list[str]:
        """A tool call, said once: the live word that it runs and the stored call may
        come in either order (the relay's lag)."""
        if tool_use_id in self.tools:
            return []
        self.tools[tool_use_id] = name
        return [f"tool {name} running"]

    def _text(self) -> list[str]:
        text, self.streamed = self.streamed, ""
        return [f"writing: {text}"] if text else []

    def _waiting(self, e: S.ConfirmationRequested) -> RunOut:
        sid, action = self.session_id, e.action_id
        approve = f'POST /api/v1/chat/{sid}/confirm {{"action_id": "{action}", "confirmed": true}}'
        return RunOut(
            session_id=sid, run_id=self.run_id, status="waiting_confirmation",
            answer=self.answer, citations=self.citations, action_id=action, tool=e.tool,
            description=e.description, approve=approve,
        )  # fmt: skip

    def _ended(self, e: S.RunCompleted | S.RunStopped | S.RunFailed) -> RunOut:
        status: RunStatus
        match e:
            case S.RunCompleted():
                status, code, error = "completed", None, None
            case S.RunStopped(reason=reason):
                status, code, error = "stopped", None, reason
            case S.RunFailed(reason=reason, error_code=failed):
                status, code, error = "failed", failed, reason
            case _:
                assert_never(e)
        made = [
            MadeOut(id=a.artifact_id, type=a.kind, name=a.name,
                    uri=artifact_uri(self.session_id, a.artifact_id))
            for a in e.artifacts
        ]  # fmt: skip
        return RunOut(
            session_id=self.session_id, run_id=self.run_id, status=status, answer=self.answer,
            citations=self.citations, artifacts=made, error_code=code, error=error,
        )  # fmt: skip


def run_text(out: RunOut) -> str:
    """The outcome as text: the answer with its sources and artifacts, or what to do."""
    match out.status:
        case "waiting_confirmation":
            head = (
                f"The run waits for a human to approve {out.tool}: {out.description}. "
                f"Approve (or refuse with false): {out.approve}; the run then goes on."
            )
        case "failed":
            head = f"The run failed ({out.error_code}): {out.error}"
        case "stopped":
            head = f"The run was stopped: {out.error}"
        case "completed":
            head = ""
        case _:
            assert_never(out.status)
    parts = [head, out.answer]
    if out.citations:
        parts.append(
            "Sources:\n" + "\n".join(f"[{c.index}] {c.title} {c.url}" for c in out.citations)
        )
    if out.artifacts:
        parts.append(
            "Artifacts:\n" + "\n".join(f"- {a.name} ({a.type}): {a.uri}" for a in out.artifacts)
        )
    parts.append(f"(session {out.session_id})")
    return "\n\n".join(p for p in parts if p)


def _title(message: str) -> str:
    """A new session's title: the message's start, on one line."""
    words = " ".join(message.split())
    return (words[:57] + "...") if len(words) > 60 else words or "New session"
