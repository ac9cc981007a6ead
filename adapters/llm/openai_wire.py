"""Translation between our conversation types and OpenAI's Chat Completions shapes.

Pure functions, no I/O. `to_chat` renders a `ModelRequest` as the request body; the
same request renders to the same bytes every time (keys in one order, tool arguments
as sorted compact JSON, nothing per call), and a request that extends another renders
to messages that extend its messages, so OpenAI's automatic prefix caching (and any
compatible server's) can serve the shared prefix. `TurnBuilder` folds the streamed
chunks into a `ModelTurn`.

Thinking blocks are another vendor's (Anthropic's signatures, Gemini's): they are
never sent. Search results a tool showed go as text, each with its URL and title.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, assert_never

from domain.conversation import (
    ContentBlock,
    Message,
    ModelRequest,
    ModelTurn,
    RedactedThinkingBlock,
    StopReason,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    TurnBlock,
    Usage,
)

JSONObject = dict[str, Any]

_STOP_REASONS: dict[str, StopReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


def arguments_text(args: dict[str, object]) -> str:
    """Tool arguments as the model is shown them: one spelling for one value."""
    return json.dumps(args, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def to_chat(request: ModelRequest, *, model: str, max_tokens: int) -> JSONObject:
    """The keyword arguments of `chat.completions.create` for `request` (called with
    `stream=True`)."""
    messages: list[JSONObject] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    for message in request.messages:
        messages.extend(_messages(message))
    body: JSONObject = {
        "model": request.model or model,
        "messages": messages,
        "max_completion_tokens": request.max_tokens or max_tokens,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                },
            }
            for t in request.tools
        ]
    return body


def _messages(message: Message) -> list[JSONObject]:
    """One of our messages as Chat Completions messages: an assistant turn is one
    message (text and tool calls); a user message is its tool results, each a `tool`
    message in order, then its text, if any, as one user message."""
    if message.role == "assistant":
        text = "".join(b.text for b in message.content if isinstance(b, TextBlock))
        calls = [
            {
                "id": b.id,
                "type": "function",
                "function": {"name": b.name, "arguments": arguments_text(b.input)},
            }
            for b in message.content
            if isinstance(b, ToolUseBlock)
        ]
        if not calls:
            # The API wants content on an assistant message without tool calls.
            return [{"role": "assistant", "content": text}]
        return [{"role": "assistant", "content": text or None, "tool_calls": calls}]
    results: list[JSONObject] = []
    texts: list[str] = []
    for block in message.content:
        _user_block(block, results, texts)
    if texts:
        results.append({"role": "user", "content": "\n\n".join(texts)})
    return results


def _user_block(block: ContentBlock, results: list[JSONObject], texts: list[str]) -> None:
    match block:
        case ToolResultBlock(tool_use_id=tool_use_id):
            results.append(
                {"role": "tool", "tool_call_id": tool_use_id, "content": result_text(block)}
            )
        case TextBlock(text=text):
            if text:
                texts.append(text)
        case ThinkingBlock() | RedactedThinkingBlock() | ToolUseBlock():
            pass  # not a user's: nothing to send
        case _:
            assert_never(block)


def result_text(block: ToolResultBlock) -> str:
    """A tool result as text: its pages, each with its URL and title, when it showed some."""
    if block.results:
        pages = (f"[source] {r.title}\n{r.source}\n{r.text or r.source}" for r in block.results)
        return "\n\n".join(pages)
    return f"Error: {block.content}" if block.is_error else block.content


@dataclass
class _Call:
    id: str = ""
    name: str = ""
    arguments: str = ""


@dataclass
class TurnBuilder:
    """Folds streamed Chat Completions chunks (as plain dicts) into a `ModelTurn`.

    `seed` stands for the context the turn answers (`call_seed`): a server that sends a
    tool call without an id gets one made of it, unique in the session."""

    model: str
    seed: str = ""
    text: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    calls: dict[int, _Call] = field(default_factory=dict)
    finish_reason: str | None = None
    usage: Usage | None = None

    def add_call_delta(self, delta: JSONObject) -> None:
        index = delta.get("index")
        if not isinstance(index, int):
            # Some compatible servers leave the index out: a new id starts a new call,
            # anything else continues the last one.
            last = max(self.calls, default=-1)
            known, given = self.calls[last].id if last >= 0 else "", delta.get("id")
            index = last + 1 if last < 0 or (given and known and given != known) else last
        call = self.calls.setdefault(index, _Call())
        call.id = call.id or str(delta.get("id") or "")
        function = delta.get("function") or {}
        call.name = call.name or str(function.get("name") or "")
        call.arguments += str(function.get("arguments") or "")

    def set_usage(self, usage: JSONObject) -> None:
        prompt = int(usage.get("prompt_tokens") or 0)
        details = usage.get("prompt_tokens_details") or {}
        cached = int(details.get("cached_tokens") or 0)
        # `prompt_tokens` counts the cached ones too; ours are the uncached part.
        self.usage = Usage(
            input_tokens=max(prompt - cached, 0),
            output_tokens=int(usage.get("completion_tokens") or 0),
            cache_read_tokens=cached,
        )

    def turn(self) -> ModelTurn:
        blocks: list[TurnBlock] = []
        if self.reasoning:
            blocks.append(ThinkingBlock("".join(self.reasoning)))
        if self.text:
            blocks.append(TextBlock("".join(self.text)))
        for index, call in sorted(self.calls.items()):
            blocks.append(
                ToolUseBlock(
                    call.id or f"call_{self.seed}_{index}",
                    call.name,
                    parse_arguments(call.arguments),
                )
            )
        stop = _STOP_REASONS.get(self.finish_reason or "", "end_turn")
        if any(isinstance(b, ToolUseBlock) for b in blocks) and stop == "end_turn":
            stop = "tool_use"
        return ModelTurn(tuple(blocks), stop, self.usage or Usage(), self.model)


def call_seed(rendered: object) -> str:
    """A short digest of a request's rendered input: ids made of it differ from turn to
    turn of a session (each answers a longer context) and stay the same for the same
    context; letters, digits and `_` only, as every vendor takes them."""
    text = json.dumps(rendered, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def parse_arguments(arguments: str) -> dict[str, object]:
    """The call's arguments; text that is not a JSON object is kept as `_raw`, so the
    engine's check of the arguments fails the call with a reason the model can read."""
    if not arguments.strip():
        return {}
    try:
        value = json.loads(arguments)
    except json.JSONDecodeError:
        return {"_raw": arguments}
    return value if isinstance(value, dict) else {"_raw": arguments}
