"""Context assembly: the request to the model as a pure function of the session's events.

Frozen system prompt and tool list first; then the conversation folded from events
(or, after a `ContextCompacted`, its summary and what came after); the plan recited at
the very end. Nothing earlier changes from one step to the next, so the prompt prefix
stays byte-identical and the vendor's prompt cache keeps working.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from eventsourcing.domain import AggregateEvent

from domain.conversation import (
    ContentBlock,
    Message,
    ModelRequest,
    Role,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
)
from domain.policies import STRIKE_NOTICE

PLAN_MARKS = {"done": "[x]", "in_progress": "[~]", "pending": "[ ]", "skipped": "[-]"}


@dataclass(frozen=True)
class ContextFrame:
    """What stays the same for a whole session: the role, the rules, the tools."""

    system: str
    tools: tuple[ToolSpec, ...]
    model: str | None = None
    max_tokens: int | None = None
    thinking_budget: int = 0


Compaction = tuple[str, int]  # (summary, the last version it stands for)


def build_request(
    events: Sequence[AggregateEvent], frame: ContextFrame, compaction: Compaction | None = None
) -> ModelRequest:
    """The next model request for a session whose log is `events` (in version order).

    `compaction` overrides the log's newest `ContextCompacted` (to measure one first).
    """
    messages = fold_messages(events, compaction)
    plan = current_plan(events)
    if plan:
        messages = _recite(messages, plan)
    return ModelRequest(
        system=frame.system,
        tools=frame.tools,
        messages=tuple(_mark_stable(messages)),
        model=frame.model,
        max_tokens=frame.max_tokens,
        thinking_budget=frame.thinking_budget,
    )


def fold_messages(
    events: Sequence[AggregateEvent], compaction: Compaction | None = None
) -> list[Message]:
    """The conversation as alternating user / assistant messages."""
    compaction = compaction or latest_compaction(events)
    boundary = compaction[1] if compaction else 0
    turns: list[tuple[Role, list[ContentBlock]]] = []
    if compaction:
        text = f"[Summary of the conversation so far]\n{compaction[0]}"
        turns.append(("user", [TextBlock(text)]))
    for e in events:
        if e.originator_version > boundary:
            turn = _turn_of(e)
            if turn is not None:
                turns.append(turn)
    return _merge(turns)


def latest_compaction(events: Sequence[AggregateEvent]) -> Compaction | None:
    for e in reversed(events):
        if type(e).__name__ == "ContextCompacted":
            return e.summary, e.through_version  # type: ignore[attr-defined]
    return None


def _turn_of(e: AggregateEvent) -> tuple[Role, list[ContentBlock]] | None:
    kind = type(e).__name__
    if kind == "UserMessageAppended":
        text = e.text  # type: ignore[attr-defined]
        if e.attachments:  # type: ignore[attr-defined]
            text += "\n[attachments: " + ", ".join(e.attachments) + "]"  # type: ignore[attr-defined]
        return "user", [TextBlock(text)]
    if kind == "AssistantTurnRecorded":
        blocks = [content_block(b) for b in e.content]  # type: ignore[attr-defined]
        return ("assistant", blocks) if blocks else None
    if kind == "ToolResultRecorded":
        return "user", [_tool_result(e)]
    if kind == "StrikeRecorded":
        notice = STRIKE_NOTICE.format(
            tool=e.tool,  # type: ignore[attr-defined]
            count=e.count,  # type: ignore[attr-defined]
            signature=e.error_signature,  # type: ignore[attr-defined]
        )
        return "user", [TextBlock(notice)]
    if kind == "RebootRequested":
        questions = "\n".join(f"{i}. {q}" for i, q in enumerate(e.questions, 1))  # type: ignore[attr-defined]
        return "user", [
            TextBlock(
                "[reboot] No plan step has been finished for a while. Answer these five "
                f"questions before you act again:\n{questions}"
            )
        ]
    return None


def content_block(raw: dict[str, object]) -> ContentBlock:
    """A recorded content block (plain data) as our model type."""
    kind = raw["type"]
    if kind == "text":
        return TextBlock(str(raw["text"]))
    if kind == "thinking":
        return ThinkingBlock(str(raw["thinking"]), str(raw.get("signature", "")))
    args = raw["input"]
    assert isinstance(args, dict)
    return ToolUseBlock(str(raw["id"]), str(raw["name"]), args)


def _tool_result(e: AggregateEvent) -> ToolResultBlock:
    status = e.status  # type: ignore[attr-defined]
    summary = e.summary  # type: ignore[attr-defined]
    if status == "success":
        return ToolResultBlock(e.tool_use_id, summary)  # type: ignore[attr-defined]
    error = e.error or summary  # type: ignore[attr-defined]
    prefix = {"error": "Error", "cancelled": "Cancelled", "interrupted": "Interrupted"}[status]
    content = f"{prefix}: {error}" if error == summary else f"{prefix}: {error}\n{summary}"
    return ToolResultBlock(e.tool_use_id, content, is_error=True)  # type: ignore[attr-defined]


def _merge(turns: list[tuple[Role, list[ContentBlock]]]) -> list[Message]:
    """Join consecutive turns of one role; tool results go first in a user message."""
    merged: list[tuple[Role, list[ContentBlock]]] = []
    for role, blocks in turns:
        if merged and merged[-1][0] == role:
            merged[-1][1].extend(blocks)
        else:
            merged.append((role, list(blocks)))
    messages = []
    for role, blocks in merged:
        if role == "user":
            blocks.sort(key=lambda b: not isinstance(b, ToolResultBlock))  # stable
        messages.append(Message(role, tuple(blocks)))
    return messages


def current_plan(events: Sequence[AggregateEvent]) -> list[dict[str, str]]:
    for e in reversed(events):
        if type(e).__name__ == "PlanUpdated":
            return list(e.items)  # type: ignore[attr-defined]
    return []


def plan_recitation(plan: list[dict[str, str]]) -> str:
    done = sum(1 for i in plan if i.get("status") == "done")
    lines = [f"[Current plan: {done}/{len(plan)} done]"]
    lines += [
        f"{PLAN_MARKS.get(i.get('status', 'pending'), '[ ]')} {n}. {i['title']}"
        for n, i in enumerate(plan, 1)
    ]
    lines.append("Stay on the plan; update it with update_plan when a step is done.")
    return "\n".join(lines)


def _recite(messages: list[Message], plan: list[dict[str, str]]) -> list[Message]:
    recitation = TextBlock(plan_recitation(plan))
    if messages and messages[-1].role == "user":
        last = messages[-1]
        return [*messages[:-1], Message("user", (*last.content, recitation))]
    return [*messages, Message("user", (recitation,))]


def _mark_stable(messages: list[Message]) -> list[Message]:
    """A cache breakpoint on the newest message that the next request repeats unchanged.

    The last message changes next time (the recitation moves on), so the breakpoint
    goes on the one before it.
    """
    if len(messages) < 2:
        return messages
    stable = messages[-2]
    return [*messages[:-2], Message(stable.role, stable.content, True), messages[-1]]
