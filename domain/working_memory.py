"""Working memory: a session's task plan, findings and progress log, folded from events.

The three documents (`task_plan.md`, `findings.md`, `progress.md`) are a pure
function of the session's events, so the read model can be rebuilt from the log and
a test can compute exactly what the view must hold.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Protocol, TypedDict, cast

PLAN_MARKS = {"done": "x", "in_progress": "~", "pending": " ", "skipped": "-"}
KEPT_FAILURES = ("error", "interrupted")
NOTHING_YET = "(nothing yet)"

# Events that change the documents. `ToolCallRequested` only remembers which tool a
# call used, so that a failure in the log can name it; it changes no document.
DOCUMENT_EVENTS = frozenset(
    {
        "SessionStarted", "SessionRenamed", "PlanUpdated", "FindingRecorded",
        "ProgressNoted", "ToolResultRecorded", "StrikeRecorded",
        "RunStarted", "RunCompleted", "RunFailed", "RunStopped",
    }
)  # fmt: skip


class SessionEvent(Protocol):
    """What the fold needs of any stored session event; the rest is read by name."""

    @property
    def originator_version(self) -> int: ...

    @property
    def timestamp(self) -> datetime: ...


@dataclass(frozen=True)
class PlanItem:
    title: str
    status: str


@dataclass(frozen=True)
class Citation:
    url: str
    title: str = ""
    blob_ref: str = ""


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
        return cast(StateJson, asdict(self))

    @classmethod
    def from_json(cls, data: StateJson) -> WorkingMemoryState:
        return cls(
            title=data["title"],
            plan=tuple(PlanItem(i["title"], i["status"]) for i in data["plan"]),
            findings=tuple(
                Finding(f["text"], tuple(_citation(c) for c in f["citations"]))
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
    plan_counts: Mapping[str, int]  # every plan status -> how many items have it
    finding_count: int
    citation_count: int
    source_count: int  # distinct cited urls
    version: int
    updated_at: datetime | None


# -- the fold ------------------------------------------------------------------


def fold(state: WorkingMemoryState, event: SessionEvent) -> WorkingMemoryState:
    """The state after `event`; the very same state for events that change nothing."""
    kind = type(event).__name__
    if kind == "ToolCallRequested":
        call = {str(_attr(event, "tool_use_id")): str(_attr(event, "tool"))}
        return replace(state, open_calls={**state.open_calls, **call})
    if kind not in DOCUMENT_EVENTS:
        return state
    if kind == "ToolResultRecorded":
        tool_use_id = str(_attr(event, "tool_use_id"))
        tool = state.open_calls.get(tool_use_id, tool_use_id)
        calls = {k: v for k, v in state.open_calls.items() if k != tool_use_id}
        state = replace(state, open_calls=calls)
        if _attr(event, "status") not in KEPT_FAILURES:
            return state  # the log keeps what went wrong, not every call that worked
        return _stamped(_logged(state, event, _failure_line(tool, event)), event)
    return _stamped(_fold_document(state, event, kind), event)


def fold_all(events: Iterable[SessionEvent]) -> WorkingMemoryState:
    """The state of a whole session log."""
    state = WorkingMemoryState()
    for event in events:
        state = fold(state, event)
    return state


def _fold_document(state: WorkingMemoryState, event: SessionEvent, kind: str) -> WorkingMemoryState:
    if kind in ("SessionStarted", "SessionRenamed"):
        return replace(state, title=str(_attr(event, "title")))
    if kind == "PlanUpdated":
        items = _attr(event, "items")
        plan = tuple(PlanItem(str(i["title"]), str(i.get("status", "pending"))) for i in items)
        return replace(state, plan=plan)  # the whole plan, replacing the previous one
    if kind == "FindingRecorded":
        citations = tuple(_citation(c) for c in _attr(event, "citations"))
        finding = Finding(str(_attr(event, "text")), citations)
        return replace(state, findings=(*state.findings, finding))
    return _logged(state, event, _log_line(event, kind))


def _log_line(event: SessionEvent, kind: str) -> str:
    if kind == "ProgressNoted":
        return str(_attr(event, "text"))
    if kind == "StrikeRecorded":
        tool, signature = _attr(event, "tool"), _attr(event, "error_signature")
        count = _attr(event, "count")
        return f"3-strike: tool {tool} failing with {_one_line(signature)} (strike {count})"
    run = f"run {str(_attr(event, 'run_id'))[:8]}"
    if kind == "RunStarted":
        worker = _attr(event, "worker")
        return f"{run} started on worker {worker}" if worker else f"{run} started"
    if kind == "RunCompleted":
        return f"{run} completed ({_attr(event, 'reason')})"
    if kind == "RunFailed":
        return f"{run} failed [{_attr(event, 'error_code')}]: {_one_line(_attr(event, 'reason'))}"
    return f"{run} stopped: {_one_line(_attr(event, 'reason'))}"  # RunStopped


def _failure_line(tool: str, event: SessionEvent) -> str:
    status = str(_attr(event, "status"))
    error = _one_line(_attr(event, "error") or "")
    summary = _one_line(_attr(event, "summary") or "")
    # Either may be the terse one (an error code, or a one-word summary): keep both.
    detail = f"{error} ({summary})" if error and summary and summary != error else error or summary
    verb = "failed" if status == "error" else status
    return f"tool {tool} {verb}: {detail or 'no detail'}"


def _logged(state: WorkingMemoryState, event: SessionEvent, text: str) -> WorkingMemoryState:
    entry = LogEntry(_utc(event.timestamp), text)
    return replace(state, progress=(*state.progress, entry))


def _stamped(state: WorkingMemoryState, event: SessionEvent) -> WorkingMemoryState:
    return replace(state, version=event.originator_version, updated_at=_utc(event.timestamp))


def _attr(event: SessionEvent, name: str) -> Any:
    # Session events are built by the `@event` decorator, so their payload
    # attributes are not visible to a type checker: read them by name, once, here.
    return getattr(event, name)


def _citation(data: Mapping[str, str]) -> Citation:
    return Citation(
        str(data["url"]).strip(),
        str(data.get("title") or "").strip(),
        str(data.get("blob_ref") or ""),
    )


def _utc(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat()


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


# -- rendering -----------------------------------------------------------------


def render(state: WorkingMemoryState) -> WorkingMemory:
    """The three markdown documents and their counts (deterministic)."""
    counts = {status: 0 for status in PLAN_MARKS}
    for item in state.plan:
        counts[item.status] = counts.get(item.status, 0) + 1
    citations = [c for f in state.findings for c in f.citations]
    return WorkingMemory(
        task_plan=render_task_plan(state),
        findings=render_findings(state),
        progress=render_progress(state),
        plan_counts=counts,
        finding_count=len(state.findings),
        citation_count=len(citations),
        source_count=len(_sources(state)),
        version=state.version,
        updated_at=datetime.fromisoformat(state.updated_at) if state.updated_at else None,
    )


def render_task_plan(state: WorkingMemoryState) -> str:
    lines = ["# Task Plan", ""]
    if state.title:
        lines += [f"Goal: {_one_line(state.title)}", ""]
    if not state.plan:
        return _doc([*lines, NOTHING_YET])
    done = sum(1 for i in state.plan if i.status == "done")
    lines += [f"{done}/{len(state.plan)} done", ""]
    lines += [f"- [{PLAN_MARKS.get(i.status, '?')}] {_one_line(i.title)}" for i in state.plan]
    return _doc(lines)


def render_findings(state: WorkingMemoryState) -> str:
    lines = ["# Findings", ""]
    if not state.findings:
        return _doc([*lines, NOTHING_YET])
    for number, finding in enumerate(state.findings, start=1):
        prefix = f"{number}. "
        lines.append(prefix + _indented(finding.text, " " * len(prefix)))
        for c in finding.citations:
            saved = f" (saved as `{c.blob_ref}`)" if c.blob_ref else ""
            lines.append(f"{' ' * len(prefix)}- {_link(c.url, c.title)}{saved}")
    lines += ["", "## Sources", ""]
    lines += [f"- {_link(url, title)}" for url, title in _sources(state).items()]
    return _doc(lines)


def render_progress(state: WorkingMemoryState) -> str:
    lines = ["# Progress", ""]
    if not state.progress:
        return _doc([*lines, NOTHING_YET])
    for entry in state.progress:
        stamp = f"- {datetime.fromisoformat(entry.at):%H:%M:%S} "
        lines.append(stamp + _indented(entry.text, "  "))
    return _doc(lines)


def _sources(state: WorkingMemoryState) -> dict[str, str]:
    """Each cited url once, in order of first citation, with the first title it had."""
    sources: dict[str, str] = {}
    for finding in state.findings:
        for c in finding.citations:
            if not sources.get(c.url):
                sources[c.url] = c.title
    return sources


def _link(url: str, title: str) -> str:
    # Angle brackets keep a url with spaces or parentheses one markdown link.
    target = f"<{url}>" if any(ch in url for ch in " ()<>") else url
    if not title:
        return target
    label = _one_line(title).replace("[", "\\[").replace("]", "\\]")
    return f"[{label}]({target})"


def _indented(text: str, indent: str) -> str:
    # Continuation lines stay inside their list item.
    lines = [line.rstrip() for line in text.strip().splitlines()] or [""]
    return "\n".join([lines[0], *(indent + line if line else "" for line in lines[1:])])


def _doc(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"
