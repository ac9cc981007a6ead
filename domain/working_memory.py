"""Working memory: a session's task plan, findings and progress log, folded from events.

The three documents (`task_plan.md`, `findings.md`, `progress.md`, rendered by
`domain.working_memory_render`) are a pure function of the session's events, so the
read model can be rebuilt from the log and a test can compute exactly what the view
must hold.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TypedDict, assert_never

from domain.events import SessionEvent
from domain.session import AgentSession as S
from domain.session_decks import DeckLog as D
from domain.values import Citation, PlanItem, PlanItemStatus

KEPT_FAILURES = ("error", "interrupted")


@dataclass(frozen=True)
class Finding:
    text: str
    citations: tuple[Citation, ...] = ()


@dataclass(frozen=True)
class LogEntry:
    at: str  # ISO 8601, UTC: the state is stored as JSON
    text: str


class StateJson(TypedDict):
    """The state as stored in a jsonb column."""

    title: str
    plan: list[dict[str, str]]
    findings: list[FindingJson]
    progress: list[dict[str, str]]
    open_calls: dict[str, str]
    version: int
    updated_at: str


class FindingJson(TypedDict):
    text: str
    citations: list[dict[str, str]]


@dataclass(frozen=True)
class WorkingMemoryState:
    """Everything the documents are rendered from (the fold's accumulator)."""

    title: str = ""
    plan: tuple[PlanItem, ...] = ()
    findings: tuple[Finding, ...] = ()
    progress: tuple[LogEntry, ...] = ()
    # tool use id -> tool, for calls with no result yet
    open_calls: Mapping[str, str] = field(default_factory=dict)
    version: int = 0  # of the last event that changed a document
    updated_at: str = ""  # ISO 8601 timestamp of that event, UTC

    def to_json(self) -> StateJson:
        return {
            "title": self.title,
            "plan": [i.to_json() for i in self.plan],
            "findings": [
                {"text": f.text, "citations": [c.to_json() for c in f.citations]}
                for f in self.findings
            ],
            "progress": [{"at": e.at, "text": e.text} for e in self.progress],
            "open_calls": dict(self.open_calls),
            "version": self.version,
            "updated_at": self.updated_at,
        }

    @classmethod
    def from_json(cls, data: StateJson) -> WorkingMemoryState:
        return cls(
            title=data["title"],
            plan=tuple(PlanItem.of(i) for i in data["plan"]),
            findings=tuple(
                Finding(f["text"], tuple(Citation.of(c) for c in f["citations"]))
                for f in data["findings"]
            ),
            progress=tuple(LogEntry(e["at"], e["text"]) for e in data["progress"]),
            open_calls=dict(data["open_calls"]),
            version=data["version"],
            updated_at=data["updated_at"],
        )


@dataclass(frozen=True)
class WorkingMemory:
    """The three rendered documents of a session, with counts for a client."""

    task_plan: str
    findings: str
    progress: str
    plan_counts: Mapping[PlanItemStatus, int]  # every plan status -> items with it
    finding_count: int
    citation_count: int
    source_count: int  # distinct cited urls
    version: int
    updated_at: datetime | None


# -- the fold ------------------------------------------------------------------


def fold(state: WorkingMemoryState, e: SessionEvent) -> WorkingMemoryState:
    """The state after `e`; the very same state for events that change nothing."""
    match e:
        case S.ToolCallRequested(tool_use_id=tool_use_id, tool=tool):
            # Remembered only so that a failure in the log can name its tool.
            return replace(state, open_calls={**state.open_calls, tool_use_id: tool})
        case S.ToolResultRecorded():
            return _result(state, e)
        case S.SessionStarted(title=title) | S.SessionRenamed(title=title):
            return _stamped(replace(state, title=title), e)
        case S.PlanUpdated(items=items):  # the whole plan, replacing the previous one
            return _stamped(replace(state, plan=tuple(items)), e)
        case S.FindingRecorded(text=text, citations=citations):
            finding = Finding(text, tuple(citations))
            return _stamped(replace(state, findings=(*state.findings, finding)), e)
        case S.ProgressNoted(text=text):
            return _logged(state, e, text)
        case S.StrikeRecorded(tool=tool, error_signature=signature, count=count):
            line = f"3-strike: tool {tool} failing with {one_line(signature)} (strike {count})"
            return _logged(state, e, line)
        case S.RunStarted(run_id=run_id, worker=worker):
            where = f" on worker {worker}" if worker else ""
            return _logged(state, e, f"{_run(run_id)} started{where}")
        case S.RunCompleted(run_id=run_id, reason=reason):
            return _logged(state, e, f"{_run(run_id)} completed ({reason})")
        case S.RunFailed(run_id=run_id, reason=reason, error_code=code):
            return _logged(state, e, f"{_run(run_id)} failed [{code}]: {one_line(reason)}")
        case S.RunStopped(run_id=run_id, reason=reason):
            return _logged(state, e, f"{_run(run_id)} stopped: {one_line(reason)}")
        case (
            S.UserMessageAppended() | S.AssistantTurnRecorded() | S.ConfirmationRequested()
            | S.ConfirmationGiven() | S.RebootRequested() | S.ContextCompacted()
            | S.BudgetThresholdReached() | S.SourceRecorded() | S.SkillActivated()
            | S.MemoriesRecalled()
            | S.ArtifactCreated() | D.DeckEvent() | S.RunRequested() | S.SessionCompleted()
            | S.SessionArchived()
            | S.ModelFallbackUsed() | S.McpToolsetChanged()
        ):  # fmt: skip
            return state
        case _:
            assert_never(e)


def fold_all(events: Iterable[SessionEvent]) -> WorkingMemoryState:
    """The state of a whole session log."""
    state = WorkingMemoryState()
    for event in events:
        state = fold(state, event)
    return state


def _result(state: WorkingMemoryState, e: S.ToolResultRecorded) -> WorkingMemoryState:
    tool = state.open_calls.get(e.tool_use_id, e.tool_use_id)
    calls = {k: v for k, v in state.open_calls.items() if k != e.tool_use_id}
    state = replace(state, open_calls=calls)
    if e.status not in KEPT_FAILURES:
        return state  # the log keeps what went wrong, not every call that worked
    error, summary = one_line(e.error or ""), one_line(e.summary or "")
    # Either may be the terse one (an error code, or a one-word summary): keep both.
    detail = f"{error} ({summary})" if error and summary and summary != error else error or summary
    verb = "failed" if e.status == "error" else e.status
    return _logged(state, e, f"tool {tool} {verb}: {detail or 'no detail'}")


def _run(run_id: object) -> str:
    return f"run {str(run_id)[:8]}"


def _logged(state: WorkingMemoryState, e: SessionEvent, text: str) -> WorkingMemoryState:
    entry = LogEntry(_utc(e.timestamp), text)
    return _stamped(replace(state, progress=(*state.progress, entry)), e)


def _stamped(state: WorkingMemoryState, e: SessionEvent) -> WorkingMemoryState:
    return replace(state, version=e.originator_version, updated_at=_utc(e.timestamp))


def _utc(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()


def one_line(text: object) -> str:
    return " ".join(str(text).split())
