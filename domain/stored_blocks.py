"""A recorded assistant turn's content, as its event stores it: plain JSON blocks (text
with the model's own citations, thinking with its signature, redacted thinking as it
came, tool uses), and reading them back."""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

from domain.conversation import (
    ModelCitation,
    ModelTurn,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
)


class CitationContent(TypedDict):
    """The model's own citation of a search result (`ModelCitation`), as stored."""

    source: str
    title: str
    cited_text: str


class TextContent(TypedDict):
    type: Literal["text"]
    text: str
    citations: NotRequired[list[CitationContent]]  # only when the model cited


class ThinkingContent(TypedDict):
    type: Literal["thinking"]
    thinking: str
    signature: str


class RedactedThinkingContent(TypedDict):
    """Thinking the vendor encrypted: kept opaque, as it came."""

    type: Literal["redacted_thinking"]
    data: str


class ToolUseContent(TypedDict):
    type: Literal["tool_use"]
    id: str
    name: str
    input: dict[str, object]


StoredBlock = TextContent | ThinkingContent | RedactedThinkingContent | ToolUseContent


def turn_blocks(turn: ModelTurn) -> list[StoredBlock]:
    """A turn's content blocks as plain data, in order (signatures kept for replay)."""
    blocks: list[StoredBlock] = []
    for block in turn.content:
        match block:
            case TextBlock(text=text, citations=()):
                blocks.append({"type": "text", "text": text})
            case TextBlock(text=text, citations=citations):
                cited: list[CitationContent] = [
                    {"source": c.source, "title": c.title, "cited_text": c.cited_text}
                    for c in citations
                ]
                blocks.append({"type": "text", "text": text, "citations": cited})
            case ThinkingBlock(thinking=thinking, signature=signature):
                blocks.append({"type": "thinking", "thinking": thinking, "signature": signature})
            case RedactedThinkingBlock(data=data):
                blocks.append({"type": "redacted_thinking", "data": data})
            case ToolUseBlock(id=tool_use_id, name=name, input=args):
                blocks.append({"type": "tool_use", "id": tool_use_id, "name": name, "input": args})
    return blocks


def model_citations(block: TextContent) -> tuple[ModelCitation, ...]:
    """The model's citations of a stored text block (none in turns stored before them)."""
    return tuple(
        ModelCitation(c["source"], c["title"], c["cited_text"]) for c in block.get("citations", ())
    )


def blocks_text(blocks: list[StoredBlock]) -> str:
    return "".join(b["text"] for b in blocks if b["type"] == "text")


def blocks_thinking(blocks: list[StoredBlock]) -> str:
    return "".join(b["thinking"] for b in blocks if b["type"] == "thinking")


def blocks_have_thinking(blocks: list[StoredBlock]) -> bool:
    """Whether the model thought in this turn (shown or redacted)."""
    return any(b["type"] in ("thinking", "redacted_thinking") for b in blocks)


def blocks_tool_uses(blocks: list[StoredBlock]) -> list[ToolUseContent]:
    return [b for b in blocks if b["type"] == "tool_use"]
