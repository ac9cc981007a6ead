"""A session's stored events as push messages (`schemas.ws`): its state, and notices.

The mapping goes through the SSE payloads (`adapters.http.streams.sse.payloads`), so a push
tells of an event exactly what the session's SSE stream shows of it (the same artifact
ids, run statuses and descriptions). The session's status follows the sessions read
model's rules (`projections/sessions.py`): a run started is `running`, a question
`waiting` (and `running` again once answered), a run's end `completed`, `error` or
`stopped`; a rename changes the title.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import assert_never
from uuid import UUID

from adapters.http.streams.sse import payloads
from domain.events import SessionEvent
from domain.session import AgentSession
from schemas import sse, ws


@dataclass(frozen=True)
class SessionState:
    """What a `session_update` says of a session."""

    session_id: UUID
    status: ws.SessionStatus
    version: int
    title: str

    @classmethod
    def of(cls, session: AgentSession) -> SessionState:
        return cls(session.id, session.status, session.version, session.title)

    def update(self) -> ws.SessionUpdate:
        return ws.SessionUpdate(
            session_id=self.session_id, status=self.status, version=self.version, title=self.title,
            data=ws.SessionData(self.status, self.version, self.title),
        )  # fmt: skip


def push_messages(
    state: SessionState, event: SessionEvent
) -> tuple[SessionState, list[ws.ServerMessage]]:
    """The session's state after `event`, and what to push of it: its notifications,
    then a `session_update` when its status or title changed."""
    after = replace(state, version=event.originator_version)
    sent: list[ws.ServerMessage] = []
    for payload in payloads(event):
        after, notice = _apply(after, payload)
        if notice is not None:
            sent.append(notice)
    if (after.status, after.title) != (state.status, state.title):
        sent.append(after.update())
    return after, sent


def _apply(state: SessionState, p: sse.SsePayload) -> tuple[SessionState, ws.Notification | None]:
    sid, v = state.session_id, state.version
    match p:
        case sse.Run(status="started"):
            return replace(state, status="running"), None
        case sse.ConfirmRequired(action_id=action, tool=tool, description=description):
            notice = notification(
                kind="approval_required", session_id=sid, version=v, action_id=action,
                message=description or f"{tool} waits for your approval",
            )  # fmt: skip
            return replace(state, status="waiting"), notice
        case sse.Confirmed():
            answered = "running" if state.status == "waiting" else state.status
            return replace(state, status=answered), None
        case sse.Done(status="stopped", run_id=run, reason=reason):
            notice = notification(
                kind="run_stopped", session_id=sid, version=v, run_id=run,
                message=f"The run was stopped ({reason})" if reason else "The run was stopped",
            )  # fmt: skip
            return replace(state, status="stopped"), notice
        case sse.Done(run_id=run):
            notice = notification(
                kind="run_completed", session_id=sid, version=v, run_id=run,
                message="The run is done",
            )  # fmt: skip
            return replace(state, status="completed"), notice
        case sse.Error(run_id=run, message=message):
            notice = notification(
                kind="run_failed", session_id=sid, version=v, run_id=run,
                message=f"The run failed: {message}",
            )  # fmt: skip
            return replace(state, status="error"), notice
        case sse.Artifact(artifact_id=artifact):
            notice = notification(
                kind="artifact_ready", session_id=sid, version=v, artifact_id=artifact,
                message=_artifact_message(p),
            )  # fmt: skip
            return state, notice
        case sse.Notice(kind="budget", budget=budget) if budget is not None:
            notice = notification(
                kind="budget_alert", session_id=sid, version=v, message=_budget_message(budget)
            )
            return state, notice
        case sse.Session(change="renamed", title=title) if title is not None:
            return replace(state, title=title), None
        case sse.Session(change="completed"):
            return replace(state, status="completed"), None
        case (
            sse.Run() | sse.Session() | sse.Notice() | sse.Thinking() | sse.Content()
            | sse.ToolCall() | sse.ToolResult() | sse.Message() | sse.Plan() | sse.Finding()
            | sse.Progress() | sse.Source() | sse.SkillActivated() | sse.MemoriesRecalled()
        ):  # fmt: skip
            return state, None
        case _:
            assert_never(p)


TITLES: dict[ws.NotificationKind, str] = {
    "run_completed": "Run completed", "run_failed": "Run failed", "run_stopped": "Run stopped",
    "approval_required": "Approval needed", "artifact_ready": "Artifact ready",
    "budget_alert": "Budget alert",
}  # fmt: skip


def notification(
    *,
    kind: ws.NotificationKind,
    message: str,
    session_id: UUID,
    version: int,
    artifact_id: UUID | None = None,
    action_id: str | None = None,
    run_id: UUID | None = None,
) -> ws.Notification:
    """A notification, with its headline and seed 002's `data` filled in."""
    title = TITLES[kind]
    data = ws.NotificationData(
        title=title, message=message, artifact_id=artifact_id, session_id=session_id
    )
    return ws.Notification(
        kind=kind, title=title, message=message, data=data, session_id=session_id,
        artifact_id=artifact_id, action_id=action_id, run_id=run_id, version=version,
    )  # fmt: skip


ARTIFACT_WORDS = {"ppt": "The deck", "report": "The report", "code": "The code", "file": "The file"}


def _artifact_message(a: sse.Artifact) -> str:
    what = f"{ARTIFACT_WORDS[a.kind]} {a.name!r}"
    if a.change in (None, "created"):
        return f"{what} is ready"
    return f"{what} has a new version ({a.artifact_version})"


def _budget_message(b: sse.BudgetNotice) -> str:
    limit = f" of {b.limit_usd} USD" if b.limit_usd is not None else ""
    return f"The {b.scope} budget for {b.period} is at {b.threshold}%: {b.spent_usd} USD{limit}"
