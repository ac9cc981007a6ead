"""Pure policies of the agent loop: kept failures, 3 strikes, the 5-question reboot,
summaries of tool output, and when to compact."""

from __future__ import annotations

import re

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
