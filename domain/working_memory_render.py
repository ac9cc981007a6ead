"""Working memory rendered: `task_plan.md`, `findings.md` and `progress.md` from the fold."""

from __future__ import annotations

from datetime import datetime

from domain.values import PLAN_ITEM_STATUSES, PLAN_MARKS
from domain.working_memory import WorkingMemory, WorkingMemoryState, one_line

NOTHING_YET = "(nothing yet)"


def render(state: WorkingMemoryState) -> WorkingMemory:
    """The three markdown documents and their counts (deterministic)."""
    counts = {status: 0 for status in PLAN_ITEM_STATUSES}
    for item in state.plan:
        counts[item.status] += 1
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
        lines += [f"Goal: {one_line(state.title)}", ""]
    if not state.plan:
        return _doc([*lines, NOTHING_YET])
    done = sum(1 for i in state.plan if i.status == "done")
    lines += [f"{done}/{len(state.plan)} done", ""]
    lines += [f"- [{PLAN_MARKS[i.status]}] {one_line(i.title)}" for i in state.plan]
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
    label = one_line(title).replace("[", "\\[").replace("]", "\\]")
    return f"[{label}]({target})"


def _indented(text: str, indent: str) -> str:
    # Continuation lines stay inside their list item.
    lines = [line.rstrip() for line in text.strip().splitlines()] or [""]
    return "\n".join([lines[0], *(indent + line if line else "" for line in lines[1:])])


def _doc(lines: list[str]) -> str:
    return "\n".join(lines) + "\n"
