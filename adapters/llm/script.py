"""The script format of the scripted model: turns as YAML or dicts, validated.

One turn per model call:

    - thinking: "..."            # optional
      text: "..."                # optional
      tool_calls:                # optional; id defaults to toolu_scripted_0001, ...
        - {name: record_finding, input: {text: "..."}, id: toolu_x}
      stop_reason: tool_use      # default: tool_use with tool calls, else end_turn
      usage: {input: 1200, output: 80, cache_read: 0, cache_write: 0}  # default: estimated
      delay: 0.5                 # seconds to wait before streaming
      pace: 0.005                # seconds between streamed chunks (default: none)

A file is either that list or `{model: name, turns: [...]}`. Errors name where they are
(`demo.yaml: turns[2].text: ...`).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import cast, get_args

import yaml

from domain.conversation import StopReason, Usage

DEFAULT_MODEL = "scripted"
_TURN_KEYS = frozenset({"thinking", "text", "tool_calls", "stop_reason", "usage", "delay", "pace"})
_CALL_KEYS = frozenset({"name", "input", "id"})
_USAGE_KEYS = {
    "input": "input_tokens",
    "output": "output_tokens",
    "cache_read": "cache_read_tokens",
    "cache_write": "cache_write_tokens",
}
_STOP_REASONS: tuple[str, ...] = get_args(StopReason)


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
    pace: float = 0.0


def _seconds(raw: Mapping[str, object], key: str, where: str) -> float:
    value = raw.get(key, 0)
    if not isinstance(value, int | float) or isinstance(value, bool) or value < 0:
        raise ScriptError(f"{where}.{key}: expected a non-negative number of seconds")
    return float(value)


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
    usage = _parse_usage(turn["usage"], f"{where}.usage") if "usage" in turn else None
    return ScriptedTurn(
        text,
        thinking,
        calls,
        cast(StopReason | None, stop_reason),
        usage,
        _seconds(turn, "delay", where),
        _seconds(turn, "pace", where),
    )


def parse_script(raw: object, source: str = "") -> tuple[str | None, tuple[ScriptedTurn, ...]]:
    """A bare list of turns or `{model: ..., turns: [...]}` -> (model name, turns); no
    model named: None (the scripted model answers as the model each call asks for).

    `source` (a file name) prefixes error messages: `demo.yaml: turns[2].text: ...`.
    """
    where = source or "script"
    model: str | None = None
    if isinstance(raw, Mapping):
        body = _check_keys(raw, frozenset({"model", "turns"}), where)
        model = _string(body, "model", where) or None
        raw = body.get("turns")
    if not isinstance(raw, list):
        raise ScriptError(f"{where}: expected a list of turns or a mapping with 'turns'")
    prefix = f"{source}: " if source else ""
    return model, tuple(parse_turn(t, f"{prefix}turns[{i}]") for i, t in enumerate(raw))


def load_script(path: Path) -> tuple[str | None, tuple[ScriptedTurn, ...]]:
    """A YAML script file -> (model name, turns); errors say `file:line: where: what`."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ScriptError(f"{path}: cannot read script ({e.strerror})") from None
    try:
        raw: object = yaml.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "context_mark", None) or getattr(e, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = " ".join(filter(None, (getattr(e, "context", None), getattr(e, "problem", ""))))
        raise ScriptError(f"{path}{line}: invalid YAML: {problem or e}") from None
    try:
        return parse_script(raw, str(path))
    except ScriptError as e:
        detail = str(e).removeprefix(f"{path}: ")
        raise ScriptError(f"{path}:{_line_of(text, detail)}: {detail}") from None


_STEP = re.compile(r"\[(\d+)\]|\.?([A-Za-z_]+)")


def _line_of(text: str, detail: str) -> int:
    """The line (1-based) of the deepest node a message's `turns[2].usage.input` names."""
    node: yaml.Node = yaml.compose(text) or yaml.ScalarNode("tag:yaml.org,2002:null", "")
    where = re.match(r"(turns(?:\[\d+\]|\.[A-Za-z_]+)*)", detail)
    for index, key in _STEP.findall(where.group(1) if where else ""):
        if key == "turns" and isinstance(node, yaml.SequenceNode):
            continue  # a bare list of turns
        child = _child(node, int(index) if index else key)
        if child is None:
            break
        node = child
    return node.start_mark.line + 1


def _child(node: yaml.Node, step: int | str) -> yaml.Node | None:
    if isinstance(node, yaml.SequenceNode) and isinstance(step, int) and step < len(node.value):
        child: yaml.Node = node.value[step]
        return child
    if isinstance(node, yaml.MappingNode):
        return next((v for k, v in node.value if k.value == step), None)
    return None
