"""What each session event adds to the model's conversation: a role and content blocks
(a user's message with its attached files, the model's own turn, a tool's result as the
model reads it, the engine's notices), or nothing."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import assert_never

from domain.conversation import (
    ContentBlock,
    RedactedThinkingBlock,
    Role,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from domain.events import SessionEvent
from domain.policies import STRIKE_NOTICE
from domain.session import AgentSession as S
from domain.session_decks import DeckLog as D
from domain.stored_blocks import StoredBlock, model_citations
from domain.values import MANUAL_PREFIX, RecalledMemory


def turn_of(e: SessionEvent) -> tuple[Role, list[ContentBlock]] | None:
    """What an event adds to the conversation, if anything."""
    match e:
        case S.UserMessageAppended(text=text, attachments=attachments, files=files):
            if attachments:
                text += "\n[attachments: " + ", ".join(attachments) + "]"
            for f in files:
                kept = f" (whole text: blob {f.text_blob_ref})" if f.text_blob_ref else ""
                text += (
                    f"\n\n[Attached file {f.path} ({f.media_type}, {f.size} bytes){kept}]\n{f.text}"
                )
            return "user", [TextBlock(text)]
        case S.AssistantTurnRecorded(content=content):
            blocks = [content_block(b) for b in content]
            return ("assistant", blocks) if blocks else None
        case S.ToolCallRequested(tool_use_id=tool_use_id, tool=tool, args=args):
            if not tool_use_id.startswith(MANUAL_PREFIX):
                return None  # the model's own tool use is in its turn already
            dumped = json.dumps(args, sort_keys=True, ensure_ascii=False)
            return "user", [TextBlock(f"[The user ran the tool {tool} with {dumped}]")]
        case S.ToolResultRecorded():
            result = _tool_result(e)
            if result.tool_use_id.startswith(MANUAL_PREFIX):  # no model turn asked for it
                return "user", [TextBlock(f"[Result of the user's tool call]\n{result.content}")]
            return "user", [result]
        case S.StrikeRecorded(tool=tool, count=count, error_signature=signature):
            notice = STRIKE_NOTICE.format(tool=tool, count=count, signature=signature)
            return "user", [TextBlock(notice)]
        case S.RebootRequested(questions=questions):
            listed = "\n".join(f"{i}. {q}" for i, q in enumerate(questions, 1))
            return "user", [TextBlock(REBOOT_PROMPT + listed)]
        case S.SkillActivated(by=by):
            # Activated by the model's own `activate_skill` call: its result carries them.
            return None if by == "tool" else ("user", [skill_instructions(e)])
        case S.MemoriesRecalled(memories=memories):
            return ("user", [recalled_memories(memories)]) if memories else None
        case S.SlideRewritten(tool_use_id=None, deck=deck, index=index, slide=slide):
            # The user had a slide regenerated: the model sees the slide as it is now.
            shown = json.dumps(slide.to_json(), ensure_ascii=False)
            return "user", [
                TextBlock(
                    f"[The user had slide {index} of deck {deck} regenerated "
                    f"({e.instructions!r}); it is now: {shown}]"
                )
            ]
        case (
            S.SessionStarted() | S.ConfirmationRequested() | S.ConfirmationGiven()
            | S.PlanUpdated() | S.FindingRecorded() | S.ProgressNoted()
            | S.ContextCompacted() | S.BudgetThresholdReached() | S.SourceRecorded()
            | S.ArtifactCreated() | D.DeckEvent()
            | S.RunRequested() | S.RunStarted()
            | S.RunCompleted() | S.RunFailed() | S.RunStopped() | S.SessionRenamed()
            | S.SessionCompleted() | S.SessionArchived()
            | S.ModelFallbackUsed() | S.McpToolsetChanged()
        ):  # fmt: skip
            return None  # not part of the conversation (the plan is recited at the end)
        case _:
            assert_never(e)


def skill_instructions(e: S.SkillActivated) -> TextBlock:
    """A skill's instructions as the conversation carries them (Level 2)."""
    return TextBlock(f"[Skill activated: {e.name}]\n\n{e.instructions}")


def recalled_memories(memories: Sequence[RecalledMemory]) -> TextBlock:
    """Memories recalled at a run's start, as the conversation carries them."""
    lines = "\n".join(f"- ({m.category}, {m.namespace.split(':')[0]}) {m.text}" for m in memories)
    return TextBlock(
        "[Long-term memory: what earlier sessions learned that may bear on this message. "
        "Use it if it helps; say so if it is out of date.]\n" + lines
    )


REBOOT_PROMPT = (
    "[reboot] No plan step has been finished for a while. Answer these five "
    "questions before you act again:\n"
)


def content_block(raw: StoredBlock) -> ContentBlock:
    """A recorded content block (plain data) as our model type."""
    if raw["type"] == "text":
        return TextBlock(raw["text"], model_citations(raw))
    if raw["type"] == "thinking":
        return ThinkingBlock(raw["thinking"], raw.get("signature", ""))
    if raw["type"] == "redacted_thinking":
        return RedactedThinkingBlock(raw["data"])
    return ToolUseBlock(raw["id"], raw["name"], raw["input"])


def _tool_result(e: S.ToolResultRecorded) -> ToolResultBlock:
    if e.status == "success":
        return ToolResultBlock(e.tool_use_id, e.summary)
    error = e.error or e.summary
    prefix = {"error": "Error", "cancelled": "Cancelled", "interrupted": "Interrupted"}[e.status]
    content = f"{prefix}: {error}" if error == e.summary else f"{prefix}: {error}\n{e.summary}"
    return ToolResultBlock(e.tool_use_id, content, is_error=True)
