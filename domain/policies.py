"""Pure policies of the agent loop: kept failures, 3 strikes, the 5-question reboot,
summaries of tool output, and when to compact."""

from __future__ import annotations

import re
from collections.abc import Sequence

from eventsourcing.domain import AggregateEvent

STRIKE_LIMIT = 3
COMPACTION_THRESHOLD = 0.70
SUMMARY_LIMIT = 4000  # characters of tool output kept in the context

REBOOT_QUESTIONS = (
    "Where am I? (Which step of the plan am I on?)",
    "Where am I going? (Which steps remain?)",
    "What is the goal? (Restate the user's request in one sentence.)",
    "What have I learned? (The findings so far, with their sources.)",
    "What have I done? (The progress so far, including what failed.)",
)

STRIKE_NOTICE = (
    "[notice] `{tool}` has now failed {count} times with the same error ({signature}). "
    "Stop repeating it: re-read the plan, then change approach (another tool, other "
    "arguments, or another step)."
)

_VOLATILE = re.compile(
    r"0x[0-9a-f]+|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\d+(\.\d+)?"
)


def error_signature(error: str) -> str:
    """The shape of an error: its first line with numbers, ids and addresses blanked."""
    first_line = (error.strip().splitlines() or [""])[0]
    return _VOLATILE.sub("#", first_line.lower())[:160]


def strike_due(events: Sequence[AggregateEvent], tool: str, error: str) -> int:
    """How many times `tool` has failed with this error's signature since its last strike.

    Counted over the session's events (the newest failure included); the caller
    records a strike when this reaches `STRIKE_LIMIT`.
    """
    signature = error_signature(error)
    tools = {}
    count = 0
    for e in events:
        kind = type(e).__name__
        if kind == "ToolCallRequested":
            tools[e.tool_use_id] = e.tool  # type: ignore[attr-defined]
        elif kind == "ToolResultRecorded" and e.status == "error":  # type: ignore[attr-defined]
            same_tool = tools.get(e.tool_use_id) == tool  # type: ignore[attr-defined]
            if same_tool and error_signature(e.error or "") == signature:  # type: ignore[attr-defined]
                count += 1
        elif kind == "StrikeRecorded" and e.tool == tool and e.error_signature == signature:  # type: ignore[attr-defined]
            count = 0
    return count


def iterations_without_progress(events: Sequence[AggregateEvent]) -> int:
    """Assistant turns since the plan last moved forward (an item newly done) or a reboot."""
    done: set[str] = set()
    turns = 0
    for e in events:
        kind = type(e).__name__
        if kind == "AssistantTurnRecorded":
            turns += 1
        elif kind == "PlanUpdated":
            now_done = {i["title"] for i in e.items if i.get("status") == "done"}  # type: ignore[attr-defined]
            if now_done - done:
                turns = 0
            done = now_done
        elif kind == "RebootRequested":
            turns = 0
    return turns


def summarize_output(output: str, blob_ref: str | None, limit: int = SUMMARY_LIMIT) -> str:
    """What the context keeps of a tool's output: all of it if short, else head and tail.

    The full output is in the blob store; the summary says where, so the agent can
    read more of it on purpose instead of carrying it in every later request.
    """
    if len(output) <= limit:
        return output
    head, tail = output[: limit * 3 // 4], output[-(limit // 4) :]
    omitted = len(output) - len(head) - len(tail)
    where = f" (full output: blob {blob_ref})" if blob_ref else ""
    return f"{head}\n[... {omitted} characters omitted{where} ...]\n{tail}"


def needs_compaction(estimated_tokens: int, context_window: int) -> bool:
    return estimated_tokens > COMPACTION_THRESHOLD * context_window
