"""Translation between our conversation types and the Gemini API's (google-genai types).

Pure functions, no I/O. `to_contents` renders the messages; the same request renders the
same every time, and a request that extends another renders contents that extend its
contents, so Gemini's implicit caching can serve the shared prefix. `TurnBuilder` folds
the streamed responses into a `ModelTurn`.

Gemini signs its thinking: a `thought_signature` comes on the part it belongs to (a
function call's, in a tool loop) and must go back on that part. It is kept as a
`ThinkingBlock` right before the block it came with, its signature marked `gemini:`;
thinking of other vendors (their signatures are not Gemini's) is never sent.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field

from google.genai import types

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

SIGNATURE_PREFIX = "gemini:"

_STOP_REASONS: dict[str, StopReason] = {
    "STOP": "end_turn",
    "MAX_TOKENS": "max_tokens",
    "SAFETY": "refusal",
    "RECITATION": "refusal",
    "BLOCKLIST": "refusal",
    "PROHIBITED_CONTENT": "refusal",
    "SPII": "refusal",
    "IMAGE_SAFETY": "refusal",
}


def to_config(request: ModelRequest, *, max_tokens: int) -> types.GenerateContentConfig:
    """The call's configuration: system instruction, tools, limits, thinking."""
    tools = None
    if request.tools:
        declarations = [
            types.FunctionDeclaration(
                name=t.name, description=t.description, parameters_json_schema=t.input_schema
            )
            for t in request.tools
        ]
        tools = [types.Tool(function_declarations=declarations)]
    thinking = None
    if request.thinking_budget > 0:
        thinking = types.ThinkingConfig(
            include_thoughts=True, thinking_budget=request.thinking_budget
        )
    return types.GenerateContentConfig(
        system_instruction=request.system or None,
        tools=tools,  # type: ignore[arg-type]
        max_output_tokens=request.max_tokens or max_tokens,
        thinking_config=thinking,
        # No function of ours is called by the SDK: every call comes back to the engine.
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )


def to_contents(messages: tuple[Message, ...]) -> list[types.Content]:
    names = {b.id: b.name for m in messages for b in m.content if isinstance(b, ToolUseBlock)}
    return [c for c in (_content(m, names) for m in messages) if c.parts]


def _content(message: Message, names: dict[str, str]) -> types.Content:
    parts: list[types.Part] = []
    signature: bytes | None = None
    for block in message.content:
        if isinstance(block, ThinkingBlock):
            # Gemini's own: its signature goes on the part it came before.
            if block.signature.startswith(SIGNATURE_PREFIX):
                signature = base64.b64decode(block.signature[len(SIGNATURE_PREFIX) :])
            continue
        part = _part(block, names)
        if part is None:
            continue
        if signature is not None:
            part.thought_signature, signature = signature, None
        parts.append(part)
    role = "model" if message.role == "assistant" else "user"
    return types.Content(role=role, parts=parts)


def _part(block: object, names: dict[str, str]) -> types.Part | None:
    if isinstance(block, TextBlock):
        return types.Part(text=block.text) if block.text else None
    if isinstance(block, ToolUseBlock):
        call = types.FunctionCall(id=block.id, name=block.name, args=dict(block.input))
        return types.Part(function_call=call)
    if isinstance(block, ToolResultBlock):
        key = "error" if block.is_error else "result"
        response = types.FunctionResponse(
            id=block.tool_use_id,
            name=names.get(block.tool_use_id, "tool"),
            response={key: _result_text(block)},
        )
        return types.Part(function_response=response)
    return None  # redacted thinking and the like: another vendor's


def _result_text(block: ToolResultBlock) -> str:
    if block.results:
        return "\n\n".join(
            f"[source] {r.title}\n{r.source}\n{r.text or r.source}" for r in block.results
        )
    return block.content


@dataclass
class TurnBuilder:
    """Folds streamed `GenerateContentResponse`s into a `ModelTurn`."""

    model: str
    contents: list[types.Content] = field(default_factory=list)  # what was sent
    blocks: list[TurnBlock] = field(default_factory=list)
    thinking: list[str] = field(default_factory=list)
    finish_reason: str | None = None
    usage: Usage | None = None
    calls: int = 0
    _seed: str = ""

    def add_text(self, text: str) -> None:
        last = self.blocks[-1] if self.blocks else None
        if isinstance(last, TextBlock):
            self.blocks[-1] = TextBlock(last.text + text)
        else:
            self.blocks.append(TextBlock(text))

    def add_call(self, call: types.FunctionCall, signature: bytes | None) -> None:
        if signature:
            encoded = base64.b64encode(signature).decode()
            self.blocks.append(ThinkingBlock("", SIGNATURE_PREFIX + encoded))
        call_id = call.id or f"call_{self._call_seed()}_{self.calls}"
        self.calls += 1
        self.blocks.append(ToolUseBlock(call_id, call.name or "", dict(call.args or {})))

    def _call_seed(self) -> str:
        """Gemini may give a call no id. Ours must be the same in a replay (so never
        random) and unique in the session (results, sources and confirmations are keyed
        by it): a digest of the contents the turn answers, which no other turn of the
        session shares, and only letters, digits and `_` (another vendor may see it)."""
        if not self._seed:
            digest = hashlib.sha256()
            for content in self.contents:
                digest.update(content.model_dump_json(exclude_none=True).encode())
            self._seed = digest.hexdigest()[:12]
        return self._seed

    def set_usage(self, usage: types.GenerateContentResponseUsageMetadata) -> None:
        prompt = usage.prompt_token_count or 0
        cached = usage.cached_content_token_count or 0
        # The prompt count includes the cached tokens; ours are the uncached part.
        self.usage = Usage(
            input_tokens=max(prompt - cached, 0),
            output_tokens=(usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0),
            cache_read_tokens=cached,
        )

    def turn(self) -> ModelTurn:
        blocks = list(self.blocks)
        if self.thinking:
            blocks.insert(0, ThinkingBlock("".join(self.thinking)))
        stop = _STOP_REASONS.get(self.finish_reason or "STOP", "end_turn")
        if stop == "end_turn" and any(isinstance(b, ToolUseBlock) for b in blocks):
            stop = "tool_use"
        return ModelTurn(tuple(blocks), stop, self.usage or Usage(), self.model)
