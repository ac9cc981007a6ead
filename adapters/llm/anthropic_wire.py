"""Translation between our conversation types and the Anthropic Messages API shapes.

Pure functions, no I/O: `to_wire` turns a `ModelRequest` into the request params,
`to_model_turn` turns the SDK's accumulated `Message` into a `ModelTurn`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import assert_never

from anthropic.types import (
    CacheControlEphemeralParam,
    MessageParam,
    MetadataParam,
    RedactedThinkingBlockParam,
    SearchResultBlockParam,
    TextBlockParam,
    TextCitation,
    ThinkingBlockParam,
    ThinkingConfigEnabledParam,
    ToolParam,
    ToolResultBlockParam,
    ToolUseBlockParam,
)
from anthropic.types import (
    ContentBlock as WireContentBlock,
)
from anthropic.types import (
    Message as WireMessage,
)
from anthropic.types import (
    StopReason as WireStopReason,
)
from anthropic.types import (
    Usage as WireUsage,
)

from domain.conversation import (
    CacheTtl,
    ContentBlock,
    Message,
    ModelCitation,
    ModelRequest,
    ModelTurn,
    RedactedThinkingBlock,
    SearchResultBlock,
    StopReason,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
    TurnBlock,
    Usage,
)
from domain.values import MIN_THINKING_BUDGET

WireBlock = (
    TextBlockParam
    | ThinkingBlockParam
    | RedactedThinkingBlockParam
    | ToolUseBlockParam
    | ToolResultBlockParam
)

# Models that cannot think: Claude before 3.7. Every later model can, so the list is of
# the old ones, and a new model needs no change here.
_NO_THINKING = ("claude-3-5-", "claude-3-opus", "claude-3-sonnet", "claude-3-haiku", "claude-2",
                "claude-instant")  # fmt: skip

_STOP_REASONS: dict[WireStopReason, StopReason] = {
    "end_turn": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "stop_sequence": "stop_sequence",
    "pause_turn": "pause_turn",
    "refusal": "refusal",
    # Our domain has no such reason; like max_tokens, the turn ran out of room.
    "model_context_window_exceeded": "max_tokens",
}


def _ephemeral(ttl: CacheTtl) -> CacheControlEphemeralParam:
    # The API's default lifetime is 5 minutes; only the 1-hour cache is named.
    return {"type": "ephemeral", "ttl": "1h"} if ttl == "1h" else {"type": "ephemeral"}


@dataclass(frozen=True)
class WireRequest:
    """The keyword arguments of one `messages.stream(...)` call."""

    model: str
    max_tokens: int
    system: list[TextBlockParam]
    tools: list[ToolParam]
    messages: list[MessageParam]
    thinking: ThinkingConfigEnabledParam | None
    metadata: MetadataParam | None


def to_wire(request: ModelRequest, *, model: str, max_tokens: int) -> WireRequest:
    """The Messages API params for `request`, with prompt-cache breakpoints placed."""
    # The API accepts only `user_id` in metadata; other keys would be a 400.
    user_id = request.metadata.get("user_id")
    model = request.model or model
    max_tokens = request.max_tokens or max_tokens
    return WireRequest(
        model=model,
        max_tokens=max_tokens,
        system=_system(request.system, request.cache_ttl),
        tools=_tools(request.tools, request.cache_ttl),
        messages=[_message(m, request.cache_ttl) for m in request.messages],
        thinking=_thinking(request, model, max_tokens),
        metadata={"user_id": user_id} if user_id else None,
    )


def supports_thinking(model: str) -> bool:
    """Whether the model can think (extended thinking): Claude 3.7 and later."""
    return not model.startswith(_NO_THINKING)


def _thinking(
    request: ModelRequest, model: str, max_tokens: int
) -> ThinkingConfigEnabledParam | None:
    """Extended thinking, when asked for and the API would take it: a model that thinks,
    a budget below the turn's output limit (a limit lowered since the budget was set
    keeps what fits), and a tool loop that did not start without thinking (the API then
    wants the loop's assistant turn to begin with a thinking block)."""
    budget = request.thinking_budget
    if budget >= max_tokens:
        budget = max_tokens - 1 if max_tokens > MIN_THINKING_BUDGET else 0
    if budget <= 0 or not supports_thinking(model):
        return None
    if _loop_began_unthinking(request.messages):
        return None
    return {"type": "enabled", "budget_tokens": budget}


def _loop_began_unthinking(messages: tuple[Message, ...]) -> bool:
    """Whether the newest assistant turn used tools without a thinking block first (a
    session whose budget was set mid-way): thinking waits for the next turn that ends
    its loop, as the API refuses thinking on a loop begun without it."""
    for message in reversed(messages):
        if message.role != "assistant":
            continue
        first = message.content[0] if message.content else None
        uses_tools = any(isinstance(b, ToolUseBlock) for b in message.content)
        return uses_tools and not isinstance(first, ThinkingBlock | RedactedThinkingBlock)
    return False


def _system(text: str, ttl: CacheTtl) -> list[TextBlockParam]:
    # The API rejects empty text blocks, so no system prompt means no block at all.
    if not text:
        return []
    return [{"type": "text", "text": text, "cache_control": _ephemeral(ttl)}]


def _tools(specs: tuple[ToolSpec, ...], ttl: CacheTtl) -> list[ToolParam]:
    tools: list[ToolParam] = [
        {"name": s.name, "description": s.description, "input_schema": s.input_schema}
        for s in specs
    ]
    # One breakpoint after the last tool caches the whole (frozen) tool list.
    if tools:
        tools[-1]["cache_control"] = _ephemeral(ttl)
    return tools


def _message(message: Message, ttl: CacheTtl) -> MessageParam:
    # The API rejects empty text blocks; an empty one carries nothing anyway.
    blocks = [_block(b) for b in message.content if _sendable(b)]
    if message.cache_breakpoint:
        _mark_last_cacheable(blocks, ttl)
    if message.role == "user":
        return {"role": "user", "content": blocks}
    return {"role": "assistant", "content": blocks}


def _sendable(block: ContentBlock) -> bool:
    """Whether the API takes the block back: not an empty text, and no thinking another
    vendor wrote (after a fallback): it has no signature of Anthropic's."""
    if isinstance(block, TextBlock):
        return bool(block.text)
    if isinstance(block, ThinkingBlock):
        return bool(block.signature) and not block.signature.startswith(FOREIGN_SIGNATURES)
    return True


# Signatures other adapters keep on the thinking blocks they record (Gemini's).
FOREIGN_SIGNATURES = ("gemini:",)


def _mark_last_cacheable(blocks: list[WireBlock], ttl: CacheTtl) -> None:
    # Thinking blocks cannot carry cache_control; the breakpoint goes on the last
    # block that can, which still covers everything before it.
    for block in reversed(blocks):
        if block["type"] != "thinking" and block["type"] != "redacted_thinking":
            block["cache_control"] = _ephemeral(ttl)
            return


def _block(block: ContentBlock) -> WireBlock:
    match block:
        case TextBlock(text=text):
            return {"type": "text", "text": text}
        case ThinkingBlock(thinking=thinking, signature=signature):
            return {"type": "thinking", "thinking": thinking, "signature": signature}
        case RedactedThinkingBlock(data=data):
            return {"type": "redacted_thinking", "data": data}
        case ToolUseBlock(id=id_, name=name, input=input_):
            return {"type": "tool_use", "id": id_, "name": name, "input": input_}
        case ToolResultBlock(tool_use_id=tool_use_id, results=(_, *_) as results):
            # Pages the model may cite: its citations come back as data on its text.
            return {
                "type": "tool_result",
                "tool_use_id": tool_use_id,
                "content": [_search_result(r) for r in results],
            }
        case ToolResultBlock(tool_use_id=tool_use_id, content=content, is_error=is_error):
            return {
                "type": "tool_result",
                "tool_use_id": tool_use_id,
                "content": content,
                "is_error": is_error,
            }
        case _:
            assert_never(block)


def _search_result(result: SearchResultBlock) -> SearchResultBlockParam:
    return {
        "type": "search_result",
        "source": result.source,
        "title": result.title,
        "content": [{"type": "text", "text": result.text or result.source}],
        "citations": {"enabled": True},  # all or none in a request: always all
    }


def to_model_turn(message: WireMessage, stop_reason: WireStopReason) -> ModelTurn:
    """Our `ModelTurn` for a finished message (blocks our domain has no type for are dropped)."""
    content = tuple(b for b in (_turn_block(w) for w in message.content) if b is not None)
    return ModelTurn(
        content=content,
        stop_reason=_STOP_REASONS[stop_reason],
        usage=to_usage(message.usage),
        model=message.model,
    )


def _turn_block(block: WireContentBlock) -> TurnBlock | None:
    if block.type == "text":
        return TextBlock(block.text, _citations(block.citations or ()))
    if block.type == "thinking":
        return ThinkingBlock(block.thinking, block.signature)
    if block.type == "redacted_thinking":
        return RedactedThinkingBlock(block.data)
    if block.type == "tool_use":
        return ToolUseBlock(block.id, block.name, dict(block.input))
    return None  # server-tool blocks: we send no server tools


def _citations(citations: Iterable[TextCitation]) -> tuple[ModelCitation, ...]:
    """The model's citations of search results we sent (others cite nothing we sent)."""
    return tuple(
        ModelCitation(c.source, c.title or "", c.cited_text)
        for c in citations
        if c.type == "search_result_location"
    )


def to_usage(usage: WireUsage) -> Usage:
    """Our `Usage`; counts the API leaves out (None) are 0."""
    return Usage(
        input_tokens=usage.input_tokens or 0,
        output_tokens=usage.output_tokens or 0,
        cache_read_tokens=usage.cache_read_input_tokens or 0,
        cache_write_tokens=usage.cache_creation_input_tokens or 0,
    )
