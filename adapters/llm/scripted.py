"""A deterministic model for tests, demos and offline runs.

Drive it with a script (YAML or a list of dicts, one turn per model call) or with a
function of the request. Each `stream` call takes the next turn as soon as it starts,
so concurrent calls get distinct turns in call order, and a cancelled call has still
used its turn (like a real model, a retry gets a fresh answer). Turn shape:

    - thinking: "..."            # optional
      text: "..."                # optional
      tool_calls:                # optional; id defaults to toolu_scripted_0001, ...
        - {name: record_finding, input: {text: "..."}, id: toolu_x}
      stop_reason: tool_use      # default: tool_use with tool calls, else end_turn
      usage: {input: 1200, output: 80, cache_read: 0, cache_write: 0}  # default: estimated
      delay: 0.5                 # seconds to wait before streaming

A file is either that list or `{model: name, turns: [...]}`.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias, cast, get_args

import yaml

from adapters.llm.tokens import CharRatioTokenCounter, count_request
from application.ports import LLMError, TokenCounter
from domain.conversation import (
    ModelRequest,
    ModelTurn,
    StopReason,
    StreamItem,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ToolUseBlock,
    Usage,
)

DEFAULT_MODEL = "scripted"
_TURN_KEYS = frozenset({"thinking", "text", "tool_calls", "stop_reason", "usage", "delay"})
_CALL_KEYS = frozenset({"name", "input", "id"})
_USAGE_KEYS = {
    "input": "input_tokens",
    "output": "output_tokens",
    "cache_read": "cache_read_tokens",
    "cache_write": "cache_write_tokens",
}
_STOP_REASONS: tuple[str, ...] = get_args(StopReason)
# Splits before each word that follows whitespace, so chunks join back exactly.
_WORD_BOUNDARY = re.compile(r"(?<=\s)(?=\S)")


class ScriptError(ValueError):
    """A script or a scripted turn is malformed; the message says where."""


@dataclass(frozen=True)
class ScriptedToolCall:
    name: str
    input: dict[str, object]
    id: str | None = None  # None: the model numbers it when the turn is played


@dataclass(frozen=True)
class ScriptedTurn:
    """One validated turn of a script; `usage=None` means estimate it."""

    text: str = ""
    thinking: str = ""
    tool_calls: tuple[ScriptedToolCall, ...] = ()
    stop_reason: StopReason | None = None
    usage: Usage | None = None
    delay: float = 0.0


TurnResult: TypeAlias = ModelTurn | ScriptedTurn | Mapping[str, object]
TurnFunction: TypeAlias = Callable[[ModelRequest], TurnResult | Awaitable[TurnResult]]


def _string(raw: Mapping[str, object], key: str, where: str) -> str:
    value = raw.get(key, "")
    if not isinstance(value, str):
        raise ScriptError(f"{where}.{key}: expected a string, got {type(value).__name__}")
    return value


def _check_keys(raw: object, allowed: frozenset[str], where: str) -> Mapping[str, object]:
    if not isinstance(raw, Mapping):
        raise ScriptError(f"{where}: expected a mapping, got {type(raw).__name__}")
    unknown = sorted(str(k) for k in raw if k not in allowed)
    if unknown:
        raise ScriptError(f"{where}: unknown key(s) {unknown}; allowed: {sorted(allowed)}")
    return cast(Mapping[str, object], raw)


def _parse_tool_call(raw: object, where: str) -> ScriptedToolCall:
    call = _check_keys(raw, _CALL_KEYS, where)
    name = _string(call, "name", where)
    if not name:
        raise ScriptError(f"{where}.name: a tool call needs a non-empty name")
    args = call.get("input", {})
    if not isinstance(args, Mapping) or not all(isinstance(k, str) for k in args):
        raise ScriptError(f"{where}.input: expected a mapping with string keys")
    try:
        json.dumps(args)
    except (TypeError, ValueError) as e:
        raise ScriptError(f"{where}.input: not JSON-serialisable ({e})") from None
    call_id = call.get("id")
    if call_id is not None and (not isinstance(call_id, str) or not call_id):
        raise ScriptError(f"{where}.id: expected a non-empty string")
    return ScriptedToolCall(name, copy.deepcopy(dict(args)), call_id)


def _parse_usage(raw: object, where: str) -> Usage:
    usage = _check_keys(raw, frozenset(_USAGE_KEYS), where)
    counts: dict[str, int] = {}
    for key, field_name in _USAGE_KEYS.items():
        value = usage.get(key, 0)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ScriptError(f"{where}.{key}: expected a non-negative integer")
        counts[field_name] = value
    return Usage(**counts)


def parse_turn(raw: object, where: str) -> ScriptedTurn:
    """Validate one turn in the documented shape; errors name `where` (e.g. `turns[2]`)."""
    turn = _check_keys(raw, _TURN_KEYS, where)
    raw_calls = turn.get("tool_calls", [])
    if not isinstance(raw_calls, list):
        raise ScriptError(f"{where}.tool_calls: expected a list")
    calls = tuple(_parse_tool_call(c, f"{where}.tool_calls[{i}]") for i, c in enumerate(raw_calls))
    text, thinking = _string(turn, "text", where), _string(turn, "thinking", where)
    if not (text or thinking or calls):
        raise ScriptError(f"{where}: a turn needs text, thinking or tool_calls")
    stop_reason = turn.get("stop_reason")
    if stop_reason is not None and stop_reason not in _STOP_REASONS:
        raise ScriptError(
            f"{where}.stop_reason: {stop_reason!r} is not one of {list(_STOP_REASONS)}"
        )
    delay = turn.get("delay", 0)
    if not isinstance(delay, int | float) or isinstance(delay, bool) or delay < 0:
        raise ScriptError(f"{where}.delay: expected a non-negative number of seconds")
    usage = _parse_usage(turn["usage"], f"{where}.usage") if "usage" in turn else None
    return ScriptedTurn(
        text, thinking, calls, cast(StopReason | None, stop_reason), usage, float(delay)
    )


def parse_script(raw: object, source: str = "") -> tuple[str, tuple[ScriptedTurn, ...]]:
    """A bare list of turns or `{model: ..., turns: [...]}` -> (model name, turns).

    `source` (a file name) prefixes error messages: `demo.yaml: turns[2].text: ...`.
    """
    where = source or "script"
    model = DEFAULT_MODEL
    if isinstance(raw, Mapping):
        body = _check_keys(raw, frozenset({"model", "turns"}), where)
        model = _string(body, "model", where) or DEFAULT_MODEL
        raw = body.get("turns")
    if not isinstance(raw, list):
        raise ScriptError(f"{where}: expected a list of turns or a mapping with 'turns'")
    prefix = f"{source}: " if source else ""
    return model, tuple(parse_turn(t, f"{prefix}turns[{i}]") for i, t in enumerate(raw))


def _chunks(text: str) -> Iterator[str]:
    return (chunk for chunk in _WORD_BOUNDARY.split(text) if chunk)


class _Script:
    """Plays turns in order; a callable so scripts and functions share one path."""

    def __init__(self, turns: Sequence[ScriptedTurn]) -> None:
        self._turns = list(turns)
        self._next = 0

    def __call__(self, request: ModelRequest) -> ScriptedTurn:
        if self._next >= len(self._turns):
            raise LLMError("scripted model has no more turns", retryable=False)
        self._next += 1
        return self._turns[self._next - 1]


class ScriptedLLM:
    """`LLM` that plays scripted turns or asks a function; never touches the network."""

    def __init__(
        self,
        fn: TurnFunction,
        *,
        model: str = DEFAULT_MODEL,
        counter: TokenCounter | None = None,
    ) -> None:
        self._fn = fn
        self.model = model
        self._counter: TokenCounter = counter or CharRatioTokenCounter()
        self._tool_ids = 0
        self._calls = 0
        self.requests: list[ModelRequest] = []

    @classmethod
    def from_turns(
        cls,
        turns: Sequence[Mapping[str, object]],
        *,
        model: str = DEFAULT_MODEL,
        counter: TokenCounter | None = None,
    ) -> ScriptedLLM:
        _, parsed = parse_script(list(turns))
        return cls(_Script(parsed), model=model, counter=counter)

    @classmethod
    def from_yaml(cls, path: Path | str, *, counter: TokenCounter | None = None) -> ScriptedLLM:
        path = Path(path)
        try:
            raw: object = yaml.safe_load(path.read_text(encoding="utf-8"))
        except OSError as e:
            raise ScriptError(f"{path}: cannot read script ({e.strerror})") from None
        except yaml.YAMLError as e:
            raise ScriptError(f"{path}: invalid YAML: {e}") from None
        model, parsed = parse_script(raw, str(path))
        return cls(_Script(parsed), model=model, counter=counter)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        self.requests.append(request)
        planned = await self._next_turn(request)
        if isinstance(planned, ScriptedTurn):
            if planned.delay:
                await asyncio.sleep(planned.delay)
            turn = self._finish(planned, request)
        else:
            turn = planned
        for block in turn.content:
            if isinstance(block, ThinkingBlock):
                for piece in _chunks(block.thinking):
                    yield ThinkingDelta(piece)
                    await asyncio.sleep(0)  # let concurrent streams interleave
            elif isinstance(block, TextBlock):
                for piece in _chunks(block.text):
                    yield TextDelta(piece)
                    await asyncio.sleep(0)
        yield turn

    async def _next_turn(self, request: ModelRequest) -> ModelTurn | ScriptedTurn:
        self._calls += 1
        result = self._fn(request)
        if inspect.isawaitable(result):
            result = await result
        if isinstance(result, ModelTurn | ScriptedTurn):
            return result
        try:
            return parse_turn(result, f"scripted function, call {self._calls}")
        except ScriptError as e:
            raise LLMError(str(e), retryable=False) from e

    def _finish(self, turn: ScriptedTurn, request: ModelRequest) -> ModelTurn:
        # Ids are numbered when a turn is played, so replaying a script gives the same ids.
        tool_uses = tuple(
            ToolUseBlock(call.id or self._new_tool_id(), call.name, copy.deepcopy(call.input))
            for call in turn.tool_calls
        )
        content: list[TextBlock | ThinkingBlock | ToolUseBlock] = []
        if turn.thinking:
            content.append(ThinkingBlock(turn.thinking))
        if turn.text:
            content.append(TextBlock(turn.text))
        content.extend(tool_uses)
        stop_reason = turn.stop_reason or ("tool_use" if tool_uses else "end_turn")
        usage = turn.usage or self._estimate_usage(turn, request)
        return ModelTurn(tuple(content), stop_reason, usage, self.model)

    def _new_tool_id(self) -> str:
        self._tool_ids += 1
        return f"toolu_scripted_{self._tool_ids:04d}"

    def _estimate_usage(self, turn: ScriptedTurn, request: ModelRequest) -> Usage:
        calls = [[c.name, c.input] for c in turn.tool_calls]
        calls_text = json.dumps(calls, sort_keys=True) if calls else ""
        output = self._counter.count(turn.thinking + turn.text + calls_text)
        return Usage(input_tokens=count_request(request, self._counter), output_tokens=output)


def load_llm_spec(spec: str, *, counter: TokenCounter | None = None) -> ScriptedLLM:
    """Build the model named by `TOKENDANCE_LLM`; today only `scripted:<path to YAML>`."""
    kind, sep, target = spec.strip().partition(":")
    if kind != "scripted" or not sep:
        raise ValueError(
            f"TOKENDANCE_LLM={spec!r} is not understood; expected 'scripted:<path to YAML script>'"
        )
    if not target.strip():
        raise ValueError("TOKENDANCE_LLM='scripted:' needs a path, e.g. 'scripted:demo.yaml'")
    path = Path(target.strip())
    bundled = BUNDLED_SCRIPTS / f"{path.name}.yaml"
    if path.suffix not in (".yaml", ".yml") and path.name == str(path) and bundled.exists():
        path = bundled  # a bare name (`scripted:demo`) is a script shipped with the package
    return ScriptedLLM.from_yaml(path, counter=counter)


BUNDLED_SCRIPTS = Path(__file__).parent / "scripts"
