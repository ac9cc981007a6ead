"""The model's side of a session in our own types: requests, turns, deltas, usage.

The context builder turns events into a `ModelRequest`; an `LLM` adapter turns a
request into a stream of `TextDelta` / `ThinkingStarted` / `ThinkingDelta` and one final
`ModelTurn`.
No vendor type crosses this line.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, assert_never

Role = Literal["user", "assistant"]
StopReason = Literal["end_turn", "tool_use", "max_tokens", "stop_sequence", "pause_turn", "refusal"]


@dataclass(frozen=True)
class Usage:
    """Tokens one model call consumed, by kind."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )

    @property
    def total(self) -> int:
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_write_tokens
        )


@dataclass(frozen=True)
class ModelCitation:
    """A passage of a search result the model says a text block rests on (the vendor's
    own citation, returned as data): the result's source URL, its title, the cited text."""

    source: str
    title: str
    cited_text: str


@dataclass(frozen=True)
class TextBlock:
    text: str
    citations: tuple[ModelCitation, ...] = ()  # the model's, for this block's text
    type: Literal["text"] = "text"


@dataclass(frozen=True)
class ThinkingBlock:
    """Extended thinking; `signature` must be sent back unchanged on later turns."""

    thinking: str
    signature: str = ""
    type: Literal["thinking"] = "thinking"


@dataclass(frozen=True)
class RedactedThinkingBlock:
    """Thinking the vendor encrypted (`data`): opaque, never shown, sent back unchanged."""

    data: str
    type: Literal["redacted_thinking"] = "redacted_thinking"


@dataclass(frozen=True)
class ToolUseBlock:
    id: str
    name: str
    input: dict[str, object]
    type: Literal["tool_use"] = "tool_use"


@dataclass(frozen=True)
class SearchResultBlock:
    """A page the model may cite: its URL, title and text (sent with citations enabled)."""

    source: str
    title: str
    text: str


@dataclass(frozen=True)
class ToolResultBlock:
    """A tool's result: its text, or (when it showed pages) the pages as search results."""

    tool_use_id: str
    content: str
    is_error: bool = False
    results: tuple[SearchResultBlock, ...] = ()  # when set, they are the content
    type: Literal["tool_result"] = "tool_result"


ContentBlock = TextBlock | ThinkingBlock | RedactedThinkingBlock | ToolUseBlock | ToolResultBlock
# What a model turn holds, in the order the model wrote it.
TurnBlock = TextBlock | ThinkingBlock | RedactedThinkingBlock | ToolUseBlock


@dataclass(frozen=True)
class Message:
    role: Role
    content: tuple[ContentBlock, ...]
    # A prompt-cache breakpoint after this message (the newest stable one).
    cache_breakpoint: bool = False


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the model sees it: name, description and JSON Schema of its input."""

    name: str
    description: str
    input_schema: dict[str, object]


CacheTtl = Literal["5m", "1h"]  # the prompt cache lifetimes the vendor offers

SESSION_KEY = "session_id"  # `ModelRequest.metadata` key: the session a call is made for


@dataclass(frozen=True)
class ModelRequest:
    """Everything one model call needs; a pure function of the session's events."""

    system: str
    tools: tuple[ToolSpec, ...]
    messages: tuple[Message, ...]
    model: str | None = None  # None: the adapter's configured model
    max_tokens: int | None = None  # None: the adapter's configured limit
    thinking_budget: int = 0  # 0: extended thinking off
    metadata: dict[str, str] = field(default_factory=dict)
    cache_ttl: CacheTtl = "5m"  # how long the prompt cache keeps what this call writes


@dataclass(frozen=True)
class TextDelta:
    """A piece of visible text while the model streams (live only, never stored)."""

    text: str
    type: Literal["text_delta"] = "text_delta"


@dataclass(frozen=True)
class ThinkingStarted:
    """The model has begun a thinking block (live only; its stored turn marks the end)."""

    type: Literal["thinking_start"] = "thinking_start"


@dataclass(frozen=True)
class ThinkingDelta:
    """A piece of thinking while the model streams (live only, never stored)."""

    thinking: str
    type: Literal["thinking_delta"] = "thinking_delta"


@dataclass(frozen=True)
class ToolRunning:
    """A tool call's execution has started (after any approval): live only."""

    tool_use_id: str
    name: str
    type: Literal["tool_running"] = "tool_running"


@dataclass(frozen=True)
class ToolProgress:
    """A running tool's word on how it goes (a page being read, N s of code): live only."""

    tool_use_id: str
    message: str
    type: Literal["tool_progress"] = "tool_progress"


@dataclass(frozen=True)
class ModelTurn:
    """The finished assistant turn: what gets recorded as `AssistantTurnRecorded`."""

    content: tuple[TurnBlock, ...]
    stop_reason: StopReason
    usage: Usage
    model: str

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def thinking(self) -> str:
        return "".join(b.thinking for b in self.content if isinstance(b, ThinkingBlock))

    @property
    def tool_uses(self) -> tuple[ToolUseBlock, ...]:
        return tuple(b for b in self.content if isinstance(b, ToolUseBlock))


StreamItem = TextDelta | ThinkingStarted | ThinkingDelta | ModelTurn
# What goes out live to a session's watchers, never stored.
LiveItem = TextDelta | ThinkingStarted | ThinkingDelta | ToolRunning | ToolProgress


# Role framing and block separators the counter cannot see, per message.
PER_MESSAGE_OVERHEAD = 4


def _block_text(block: ContentBlock) -> str:
    match block:
        case TextBlock(text=text):
            return text
        case ThinkingBlock(thinking=thinking):
            return thinking
        case RedactedThinkingBlock():
            return ""  # opaque: its size in tokens is not known
        case ToolUseBlock(name=name, input=args):
            return f"{name} {json.dumps(args, sort_keys=True, ensure_ascii=False)}"
        case ToolResultBlock(content=content, results=()):
            return content
        case ToolResultBlock(results=results):
            return "\n".join(f"{r.title}\n{r.source}\n{r.text}" for r in results)
        case _:
            assert_never(block)


def message_text(message: Message) -> str:
    """A message flattened for counting: its role, then its blocks."""
    return "\n".join([message.role, *(_block_text(b) for b in message.content)])


def request_text(request: ModelRequest) -> str:
    """The request flattened to one string, in a fixed order, for counting."""
    tools = [
        {"name": t.name, "description": t.description, "input_schema": t.input_schema}
        for t in request.tools
    ]
    parts = [request.system, json.dumps(tools, sort_keys=True, ensure_ascii=False)]
    for message in request.messages:
        parts.append(message.role)
        parts.extend(_block_text(block) for block in message.content)
    return "\n".join(parts)


def estimate_tokens(request: ModelRequest, count: Callable[[str], int]) -> int:
    """Estimated input tokens of a whole request: system, tool definitions, messages."""
    return count(request_text(request)) + PER_MESSAGE_OVERHEAD * len(request.messages)
