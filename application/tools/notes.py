"""Built-in tools that write the session's working memory: plan, findings, progress."""

from __future__ import annotations

import msgspec

from application.tools.base import Tool, ToolContext
from domain.values import Citation, PlanItem


class UpdatePlanArgs(msgspec.Struct, forbid_unknown_fields=True):
    items: list[PlanItem]


class UpdatePlan(Tool[UpdatePlanArgs]):
    name = "update_plan"
    description = (
        "Replace the task plan (task_plan.md) with this list of steps and their status. "
        "Send the whole plan every time; mark a step done as soon as it is."
    )
    Args = UpdatePlanArgs
    replayable = True

    async def run(self, args: UpdatePlanArgs, context: ToolContext) -> str:
        items = [PlanItem.of(i.to_json()) for i in args.items]  # titles checked and trimmed
        await context.notes.update_plan(items)
        done = sum(1 for i in items if i.status == "done")
        return f"plan updated: {done}/{len(items)} steps done"


class SourceArgs(msgspec.Struct, forbid_unknown_fields=True):
    """A source as the model names it (where its text is stored is for the system to say)."""

    url: str
    title: str = ""


class RecordFindingArgs(msgspec.Struct, forbid_unknown_fields=True):
    text: str
    citations: list[SourceArgs] = msgspec.field(default_factory=list)


class RecordFinding(Tool[RecordFindingArgs]):
    name = "record_finding"
    description = (
        "Write a finding to findings.md, with the sources it rests on (url and title). "
        "Record what you learn as you learn it, so it survives a long session."
    )
    Args = RecordFindingArgs
    replayable = True

    async def run(self, args: RecordFindingArgs, context: ToolContext) -> str:
        citations = [Citation.of({"url": c.url, "title": c.title}) for c in args.citations]
        await context.notes.record_finding(args.text, citations)
        return f"finding recorded with {len(citations)} citation(s)"


class NoteProgressArgs(msgspec.Struct, forbid_unknown_fields=True):
    text: str


class NoteProgress(Tool[NoteProgressArgs]):
    name = "note_progress"
    description = "Append a line to progress.md: what you just did, or what went wrong."
    Args = NoteProgressArgs
    replayable = True

    async def run(self, args: NoteProgressArgs, context: ToolContext) -> str:
        await context.notes.note_progress(args.text)
        return "progress noted"
