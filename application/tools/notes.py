"""Built-in tools that write the session's working memory: plan, findings, progress."""

from __future__ import annotations

from typing import Literal

import msgspec

from application.tools.base import Tool, ToolContext


class PlanItem(msgspec.Struct, forbid_unknown_fields=True):
    title: str
    status: Literal["pending", "in_progress", "done", "skipped"] = "pending"


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
        items = [{"title": i.title, "status": i.status} for i in args.items]
        await context.notes.update_plan(items)
        done = sum(1 for i in args.items if i.status == "done")
        return f"plan updated: {done}/{len(items)} steps done"


class Citation(msgspec.Struct, forbid_unknown_fields=True):
    url: str
    title: str = ""


class RecordFindingArgs(msgspec.Struct, forbid_unknown_fields=True):
    text: str
    citations: list[Citation] = msgspec.field(default_factory=list)


class RecordFinding(Tool[RecordFindingArgs]):
    name = "record_finding"
    description = (
        "Write a finding to findings.md, with the sources it rests on (url and title). "
        "Record what you learn as you learn it, so it survives a long session."
    )
    Args = RecordFindingArgs
    replayable = True

    async def run(self, args: RecordFindingArgs, context: ToolContext) -> str:
        citations = [{"url": c.url, "title": c.title} for c in args.citations]
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
