"""Translation between our conversation types and OpenAI's Responses API shapes.

Pure functions, no I/O, held to the same byte-stable rendering as Chat Completions
(`openai_wire`): the system prompt is `instructions`, each turn's text a message, each
tool call a `function_call` item and each result a `function_call_output` item, in the
order they happened. Nothing is stored on OpenAI's side (`store: false`): the log is
the context, sent whole each call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from adapters.llm.openai_wire import JSONObject, arguments_text, parse_arguments, result_text
from domain.conversation import (
    Message,
    ModelRequest,
    ModelTurn,
    StopReason,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
    TurnBlock,
    Usage,
)


def to_responses(request: ModelRequest, *, model: str, max_tokens: int) -> JSONObject:
    """The keyword arguments of `responses.create` for `request` (called with `stream=True`)."""
    items: list[JSONObject] = []
    for message in request.messages:
        items.extend(_items(message))
    body: JSONObject = {
        "model": request.model or model,
        "input": items,
        "max_output_tokens": request.max_tokens or max_tokens,
        "store": False,
    }
    if request.system:
        body["instructions"] = request.system
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.input_schema,
                "strict": False,
            }
            for t in request.tools
        ]
    return body


def _items(message: Message) -> list[JSONObject]:
    items: list[JSONObject] = []
    texts: list[str] = []
    for block in message.content:
        if isinstance(block, TextBlock) and block.text:
            texts.append(block.text)
        elif isinstance(block, ToolUseBlock):
            items.append(
                {
                    "type": "function_call",
                    "call_id": block.id,
                    "name": block.name,
                    "arguments": arguments_text(block.input),
                }
            )
        elif isinstance(block, ToolResultBlock):
            items.append(
                {"type": "function_call_output", "call_id": block.tool_use_id,
                 "output": result_text(block)}
            )  # fmt: skip
    if texts:
        text = {"role": message.role, "content": "\n\n".join(texts)}
        # The text of an assistant turn came before its calls; a user's after the results.
        return [text, *items] if message.role == "assistant" else [*items, text]
    return items


@dataclass
class ResponsesTurn:
    """The finished response (`response.completed`) as a `ModelTurn`."""

    model: str
    seed: str = ""  # `openai_wire.call_seed` of the input, for a call without an id
    thought: bool = False
    finished: bool = False
    blocks: tuple[TurnBlock, ...] = ()
    stop: StopReason = "end_turn"
    usage: Usage = field(default_factory=Usage)

    def finish(self, response: dict[str, Any]) -> None:
        self.finished = True
        self.model = str(response.get("model") or self.model)
        blocks: list[TurnBlock] = []
        for item in response.get("output") or []:
            kind = item.get("type")
            if kind == "reasoning":
                summary = "".join(str(s.get("text") or "") for s in item.get("summary") or [])
                if summary:
                    blocks.append(ThinkingBlock(summary))
            elif kind == "message":
                text = "".join(
                    str(c.get("text") or "")
                    for c in item.get("content") or []
                    if c.get("type") == "output_text"
                )
                if text:
                    blocks.append(TextBlock(text))
            elif kind == "function_call":
                blocks.append(
                    ToolUseBlock(
                        str(
                            item.get("call_id")
                            or item.get("id")
                            or f"call_{self.seed}_{len(blocks)}"
                        ),
                        str(item.get("name") or ""),
                        parse_arguments(str(item.get("arguments") or "")),
                    )
                )
        self.blocks = tuple(blocks)
        reason = (response.get("incomplete_details") or {}).get("reason")
        if reason == "max_output_tokens":
            self.stop = "max_tokens"
        elif reason == "content_filter":
            self.stop = "refusal"
        elif any(isinstance(b, ToolUseBlock) for b in blocks):
            self.stop = "tool_use"
        usage = response.get("usage") or {}
        cached = int((usage.get("input_tokens_details") or {}).get("cached_tokens") or 0)
        self.usage = Usage(
            input_tokens=max(int(usage.get("input_tokens") or 0) - cached, 0),
            output_tokens=int(usage.get("output_tokens") or 0),
            cache_read_tokens=cached,
        )

    def turn(self) -> ModelTurn:
        return ModelTurn(self.blocks, self.stop, self.usage, self.model)
