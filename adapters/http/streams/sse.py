"""Stored events and live deltas as the SSE contract's payloads (`schemas.sse`).

Every event class of a session maps here, by `match`, to its payloads; a class
without a case is a type error (`assert_never`). Messages and model turns, with their
citations, are mapped in `sse_turns`. A stored event's payloads carry its version (the
SSE id, so a client resumes with `Last-Event-ID`); live deltas carry none: they are
previews, not part of the record.
"""

from __future__ import annotations

from typing import TypeAlias, assert_never
from urllib.parse import urlsplit

from adapters.http.reads.artifact_urls import download_url
from adapters.http.streams.sse_turns import citations_of, turn_payloads
from domain.conversation import (
    LiveItem,
    TextDelta,
    ThinkingDelta,
    ThinkingStarted,
    ToolProgress,
    ToolRunning,
)
from domain.deck_fold import DeckEvent
from domain.decks import PPTX
from domain.events import SessionEvent
from domain.pricing import usd_text
from domain.session import AgentSession as S
from domain.session_decks import DeckLog as D
from domain.values import RunArtifact, artifact_id_of
from schemas import sse

ToolEvent: TypeAlias = S.ToolCallRequested | S.ToolResultRecorded | S.ConfirmationRequested
Memory: TypeAlias = (
    S.PlanUpdated | S.FindingRecorded | S.ProgressNoted | S.SourceRecorded | S.ArtifactCreated
)
Guard: TypeAlias = (
    S.StrikeRecorded
    | S.RebootRequested
    | S.ContextCompacted
    | S.BudgetThresholdReached
    | S.ModelFallbackUsed
    | S.McpToolsetChanged
)
RunEvent: TypeAlias = S.RunRequested | S.RunStarted | S.RunCompleted | S.RunFailed | S.RunStopped
Lifecycle: TypeAlias = S.SessionStarted | S.SessionRenamed | S.SessionCompleted | S.SessionArchived


def payloads(e: SessionEvent) -> list[sse.SsePayload]:
    """A stored event's payloads, with its version (a turn: its thinking's end first)."""
    match e:
        case S.UserMessageAppended() | S.AssistantTurnRecorded():
            return turn_payloads(e)
        case S.ToolCallRequested() | S.ToolResultRecorded() | S.ConfirmationRequested():
            return [_tool(e)]
        case S.ConfirmationGiven(action_id=action, approved=approved, feedback=feedback, by=by):
            return [
                sse.Confirmed(
                    version=e.originator_version,
                    timestamp=e.timestamp,
                    action_id=action,
                    approved=approved,
                    feedback=feedback,
                    by=by,
                )
            ]
        case (
            S.PlanUpdated() | S.FindingRecorded() | S.ProgressNoted() | S.SourceRecorded()
            | S.ArtifactCreated()
        ):  # fmt: skip
            return [_memory(e)]
        case (
            S.StrikeRecorded() | S.RebootRequested() | S.ContextCompacted()
            | S.BudgetThresholdReached() | S.ModelFallbackUsed() | S.McpToolsetChanged()
        ):  # fmt: skip
            return [_notice(e)]
        case S.RunRequested() | S.RunStarted() | S.RunCompleted() | S.RunFailed() | S.RunStopped():
            return [_run(e)]
        case S.SessionStarted() | S.SessionRenamed() | S.SessionCompleted() | S.SessionArchived():
            return [_session(e)]
        case D.DeckEvent():
            return [_deck(e)]
        case S.SkillActivated(name=name, score=score, by=by, skill_version=skill_version):
            return [
                sse.SkillActivated(
                    version=e.originator_version, timestamp=e.timestamp, skill=name,
                    score=score, by=by, skill_version=skill_version,
                )
            ]  # fmt: skip
        case S.MemoriesRecalled(run_id=run_id, memories=memories):
            recalled = [
                sse.RecalledMemory(
                    id=m.memory_id, namespace=m.namespace, category=m.category,  # type: ignore[arg-type]
                    text=m.text, score=m.score, source_session_id=m.source_session_id,
                    source_version=m.source_version,
                )
                for m in memories
            ]  # fmt: skip
            return [
                sse.MemoriesRecalled(
                    version=e.originator_version, timestamp=e.timestamp, run_id=run_id,
                    memories=recalled,
                )
            ]  # fmt: skip
        case _:
            assert_never(e)


def live_payload(delta: LiveItem) -> sse.SsePayload:
    """The SSE payload of a live item (no SSE id: never stored, never resumed)."""
    match delta:
        case ThinkingStarted():
            return sse.Thinking(content="", status="start")
        case ThinkingDelta(thinking=text):
            return sse.Thinking(content=text)
        case TextDelta(text=text):
            return sse.Content(content=text)
        case ToolRunning(tool_use_id=tid, name=name):
            return sse.ToolCall(id=tid, name=name, status="running")
        case ToolProgress(tool_use_id=tid, message=message):
            return sse.Progress(text=message, tool_call_id=tid)
        case _:
            assert_never(delta)


def message_of(e: SessionEvent) -> sse.Message | None:
    """The conversation message a stored event is, if it is one."""
    for payload in payloads(e):
        if isinstance(payload, sse.Message):
            return payload
    return None


def _tool(e: ToolEvent) -> sse.SsePayload:
    v, at = e.originator_version, e.timestamp
    match e:
        case S.ToolCallRequested(tool_use_id=tid, tool=tool, args=args, risk=risk):
            return sse.ToolCall(
                version=v, timestamp=at, id=tid, name=tool, args=args, status="pending", risk=risk
            )
        case S.ToolResultRecorded(tool_use_id=tid, status=status, summary=summary, error=error):
            return sse.ToolResult(
                version=v,
                timestamp=at,
                id=tid,
                status="cancelled" if status == "interrupted" else status,
                outcome=status,
                success=status == "success",
                result=summary,
                error=error,
                blob_ref=e.blob_ref,
                duration_ms=e.duration_ms,
            )
        case S.ConfirmationRequested(action_id=action, tool_use_id=tid, tool=tool, args=args):
            return sse.ConfirmRequired(
                version=v,
                timestamp=at,
                action_id=action,
                tool=tool,
                args=args,
                description=e.description,
                tool_call_id=tid,
            )
        case _:
            assert_never(e)


def _memory(e: Memory) -> sse.SsePayload:
    v, at = e.originator_version, e.timestamp
    match e:
        case S.PlanUpdated(items=items):
            return sse.Plan(
                version=v, timestamp=at, items=[sse.PlanItem(i.title, i.status) for i in items]
            )
        case S.FindingRecorded(text=text, citations=citations):
            return sse.Finding(
                version=v, timestamp=at, text=text, citations=citations_of(citations)
            )
        case S.ProgressNoted(text=text):
            return sse.Progress(version=v, timestamp=at, text=text)
        case S.SourceRecorded(number=number, url=url, title=title):
            return sse.Source(
                version=v, timestamp=at, number=number, url=url, title=title,
                domain=urlsplit(url).hostname or "", snippet=e.snippet, via=e.via,
                tool_call_id=e.tool_use_id, blob_ref=e.blob_ref,
            )  # fmt: skip
        case S.ArtifactCreated(kind=kind, name=name, blob_ref=ref, size=size, sha256=sha):
            return sse.Artifact(
                version=v,
                timestamp=at,
                kind=kind,
                name=name,
                blob_ref=ref,
                size=size,
                sha256=sha,
                media_type=e.media_type,
                artifact_id=(artifact_id := artifact_id_of(e.originator_id, v)),
                download_url=download_url(artifact_id),
            )
        case _:
            assert_never(e)


def _deck(e: DeckEvent) -> sse.Artifact:
    """A deck's new version, as the `artifact` event of its artifact."""
    change: sse.DeckChange
    page: int | None
    match e:
        case S.DeckCreated():
            change, page = "created", None
        case S.SlideAdded(index=index):
            change, page = "slide_added", index
        case S.SlideRewritten(index=index):
            change, page = "slide_rewritten", index
        case S.SlideRemoved(index=index):
            change, page = "slide_removed", index
        case S.SlidesReordered():
            change, page = "slides_reordered", None
        case S.TemplateChanged():
            change, page = "template_changed", None
        case _:
            assert_never(e)
    artifact_id = artifact_id_of(e.originator_id, e.created_at)
    return sse.Artifact(
        version=e.originator_version, timestamp=e.timestamp, kind="ppt", name=e.name,
        blob_ref=e.blob_ref, size=e.size, sha256=e.sha256, media_type=PPTX,
        artifact_id=artifact_id, artifact_version=e.deck_version, change=change,
        page_index=page, download_url=f"{download_url(artifact_id)}?version={e.deck_version}",
    )  # fmt: skip


def _notice(e: Guard) -> sse.Notice:
    v, at = e.originator_version, e.timestamp
    match e:
        case S.StrikeRecorded(tool=tool, error_signature=signature, count=count):
            return sse.Notice(
                version=v,
                timestamp=at,
                kind="strike",
                tool=tool,
                error_signature=signature,
                count=count,
            )
        case S.RebootRequested(questions=questions, iterations_without_progress=n):
            return sse.Notice(
                version=v,
                timestamp=at,
                kind="reboot",
                questions=list(questions),
                iterations_without_progress=n,
            )
        case S.ContextCompacted(summary=summary, through_version=through):
            return sse.Notice(
                version=v,
                timestamp=at,
                kind="compaction",
                summary=summary,
                through_version=through,
                tokens_before=e.tokens_before,
                tokens_after=e.tokens_after,
            )
        case S.BudgetThresholdReached(scope=scope, scope_id=scope_id, threshold=threshold):
            return sse.Notice(
                version=v,
                timestamp=at,
                kind="budget",
                budget=sse.BudgetNotice(
                    scope=scope,
                    scope_id=scope_id,
                    period=e.period,
                    threshold=threshold,
                    spent_usd=usd_text(e.spent_usd),
                    limit_usd=None if e.limit_usd is None else usd_text(e.limit_usd),
                    spent_tokens=e.spent_tokens,
                    limit_tokens=e.limit_tokens,
                ),
            )
        case S.ModelFallbackUsed(from_model=was, to_model=now, reason=reason):
            return sse.Notice(
                version=v,
                timestamp=at,
                kind="fallback",
                message=f"{was} could not answer; {now} took over",
                fallback=sse.FallbackNotice(
                    from_model=was, to_model=now, reason=reason, error_code=e.error_code
                ),
            )
        case S.McpToolsetChanged(tools=tools, unavailable=down):
            names = [f"{t['server']}__{t['tool']}" for t in tools]
            message = f"MCP tools now: {', '.join(names) or 'none'}"
            if down:
                message += "; unreachable: " + "; ".join(
                    f"{d['server']}: {d['reason']}" for d in down
                )
            return sse.Notice(version=v, timestamp=at, kind="mcp_tools", message=message)
        case _:
            assert_never(e)


def _run(e: RunEvent) -> sse.SsePayload:
    v, at = e.originator_version, e.timestamp
    match e:
        case S.RunRequested(run_id=run):
            return sse.Run(version=v, timestamp=at, status="requested", run_id=run)
        case S.RunStarted(run_id=run, worker=worker):
            return sse.Run(version=v, timestamp=at, status="started", run_id=run, worker=worker)
        case S.RunCompleted(run_id=run, reason=reason, tokens_used=tokens, message_id=message):
            status: sse.DoneStatus = (
                "max_iterations_reached" if reason == "max_iterations" else "completed"
            )
            return sse.Done(
                version=v,
                timestamp=at,
                status=status,
                message_id=_id(message),
                tokens_used=tokens,
                run_id=run,
                reason=reason,
                artifacts=_artifacts(e.artifacts),
            )
        case S.RunStopped(run_id=run, reason=reason, tokens_used=tokens, message_id=message):
            return sse.Done(
                version=v,
                timestamp=at,
                status="stopped",
                message_id=_id(message),
                tokens_used=tokens,
                run_id=run,
                reason=reason,
                artifacts=_artifacts(e.artifacts),
            )
        case S.RunFailed(run_id=run, reason=reason, error_code=code, tokens_used=tokens):
            return sse.Error(
                version=v,
                timestamp=at,
                message=reason,
                error_code=code,
                run_id=run,
                message_id=_id(e.message_id),
                tokens_used=tokens,
            )
        case _:
            assert_never(e)


def _session(e: Lifecycle) -> sse.Session:
    v, at = e.originator_version, e.timestamp
    match e:
        case S.SessionStarted(title=title, task_type=task_type, model=model):
            return sse.Session(
                version=v,
                timestamp=at,
                change="started",
                title=title,
                task_type=task_type,
                model=model,
            )
        case S.SessionRenamed(title=title):
            return sse.Session(version=v, timestamp=at, change="renamed", title=title)
        case S.SessionCompleted(reason=reason):
            return sse.Session(version=v, timestamp=at, change="completed", reason=reason)
        case S.SessionArchived():
            return sse.Session(version=v, timestamp=at, change="archived")
        case _:
            assert_never(e)


def _artifacts(made: list[RunArtifact]) -> list[sse.RunArtifact]:
    return [sse.RunArtifact(a.artifact_id, a.kind, a.name) for a in made]


def _id(message_id: int | None) -> str | None:
    return None if message_id is None else str(message_id)
