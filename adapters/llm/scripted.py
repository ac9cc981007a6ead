"""A deterministic model for tests, demos and offline runs (`ScriptedLLM`).

Drive it with a script (see `adapters/llm/script.py` for the format: YAML or a list of
dicts, one turn per model call) or with a function of the request. Each session plays
the script from its own position (the request names its session in
`metadata["session_id"]`; calls that name none share one position), so sessions never
take each other's turns. Each `stream` call takes the session's next turn as soon as it
starts, so concurrent calls get distinct turns in call order, and a cancelled call has
still used its turn (like a real model, a retry gets a fresh answer). A script loaded
for a server (`repeat`) starts again from its first turn when a session has played it
all, so every chat of every session gets an answer; the tool ids of a repetition get a
suffix (`toolu_plan_2`), as ids are unique in a session.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import inspect
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TypeAlias

from adapters.llm.script import (
    DEFAULT_MODEL,
    ScriptedTurn,
    ScriptError,
    load_script,
    parse_script,
    parse_turn,
)
from adapters.llm.tokens import CharRatioTokenCounter, count_request
from application.ports import LLMError, TokenCounter
from domain.conversation import (
    SESSION_KEY,
    ModelRequest,
    ModelTurn,
    StreamItem,
    TextBlock,
    TextDelta,
    ThinkingBlock,
    ThinkingDelta,
    ThinkingStarted,
    ToolUseBlock,
    Usage,
)

__all__ = ["ScriptError", "ScriptedLLM", "check_llm_spec", "load_llm_spec"]

# Splits before each word that follows whitespace, so chunks join back exactly.
_WORD_BOUNDARY = re.compile(r"(?<=\s)(?=\S)")
BUNDLED_SCRIPTS = Path(__file__).parent / "scripts"

TurnResult: TypeAlias = ModelTurn | ScriptedTurn | Mapping[str, object]
TurnFunction: TypeAlias = Callable[[ModelRequest], TurnResult | Awaitable[TurnResult]]


def _chunks(text: str) -> Iterator[str]:
    return (chunk for chunk in _WORD_BOUNDARY.split(text) if chunk)


def session_of(request: ModelRequest) -> str:
    """The session a request is for, as the runner names it ("" if it names none)."""
    return request.metadata.get(SESSION_KEY, "")


class _Script:
    """Plays turns in order, per session; a callable so scripts and functions share one path."""

    def __init__(
        self, turns: Sequence[ScriptedTurn], *, repeat: bool = False, follow: bool = False
    ) -> None:
        self._turns = list(turns)
        self._played: dict[str, int] = {}
        self._repeat = repeat
        self._follow = follow

    def __call__(self, request: ModelRequest) -> ScriptedTurn:
        session = session_of(request)
        played = self._played.get(session, 0)
        if self._follow:  # another process (a worker) may have played the turns shown
            played = max(played, sum(m.role == "assistant" for m in request.messages))
        if not self._turns or (played >= len(self._turns) and not self._repeat):
            raise LLMError("scripted model has no more turns", retryable=False)
        self._played[session] = played + 1
        lap, at = divmod(played, len(self._turns))
        turn = self._turns[at]
        if lap == 0 or not turn.tool_calls:
            return turn
        calls = tuple(
            dataclasses.replace(c, id=f"{c.id}_{lap + 1}") if c.id else c for c in turn.tool_calls
        )
        return dataclasses.replace(turn, tool_calls=calls)


class ScriptedLLM:
    """`LLM` that plays scripted turns or asks a function; never touches the network."""

    def __init__(
        self,
        fn: TurnFunction,
        *,
        model: str | None = None,
        counter: TokenCounter | None = None,
    ) -> None:
        self._fn = fn
        # The model every turn says answered; None: the one each request asks for.
        self.model = model
        self._counter: TokenCounter = counter or CharRatioTokenCounter()
        self._tool_ids: dict[str, int] = {}
        self._calls = 0
        self.requests: list[ModelRequest] = []

    @classmethod
    def from_turns(
        cls,
        turns: Sequence[Mapping[str, object]],
        *,
        model: str | None = None,
        counter: TokenCounter | None = None,
    ) -> ScriptedLLM:
        _, parsed = parse_script(list(turns))
        return cls(_Script(parsed), model=model, counter=counter)

    @classmethod
    def from_yaml(
        cls,
        path: Path | str,
        *,
        counter: TokenCounter | None = None,
        repeat: bool = False,
        follow: bool = False,
    ) -> ScriptedLLM:
        """`follow`: a session's next turn is the one after those its conversation shows,
        when this process played fewer (so any worker process plays the same next turn;
        a fork that copied turns goes on after them)."""
        model, parsed = load_script(Path(path))
        return cls(_Script(parsed, repeat=repeat, follow=follow), model=model, counter=counter)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        self.requests.append(request)
        planned = await self._next_turn(request)
        pace = 0.0  # between chunks; 0 still lets concurrent streams interleave
        if isinstance(planned, ScriptedTurn):
            if planned.delay:
                await asyncio.sleep(planned.delay)
            pace = planned.pace
            turn = self._finish(planned, request)
        else:
            turn = planned
        if any(isinstance(b, ThinkingBlock) for b in turn.content):
            yield ThinkingStarted()  # once a turn, as the real adapter
        for block in turn.content:
            if isinstance(block, ThinkingBlock):
                for piece in _chunks(block.thinking):
                    yield ThinkingDelta(piece)
                    await asyncio.sleep(pace)
            elif isinstance(block, TextBlock):
                for piece in _chunks(block.text):
                    yield TextDelta(piece)
                    await asyncio.sleep(pace)
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
            ToolUseBlock(
                call.id or self._new_tool_id(session_of(request)),
                call.name,
                copy.deepcopy(call.input),
            )
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
        answered = self.model or request.model or DEFAULT_MODEL
        return ModelTurn(tuple(content), stop_reason, usage, answered)

    def _new_tool_id(self, session: str) -> str:
        self._tool_ids[session] = number = self._tool_ids.get(session, 0) + 1
        return f"toolu_scripted_{number:04d}"

    def _estimate_usage(self, turn: ScriptedTurn, request: ModelRequest) -> Usage:
        calls = [[c.name, c.input] for c in turn.tool_calls]
        calls_text = json.dumps(calls, sort_keys=True) if calls else ""
        output = self._counter.count(turn.thinking + turn.text + calls_text)
        return Usage(input_tokens=count_request(request, self._counter), output_tokens=output)


def load_llm_spec(spec: str, *, counter: TokenCounter | None = None) -> ScriptedLLM:
    """Build the model named by `TOKENDANCE_LLM`; today only `scripted:<path to YAML>`.

    A malformed script raises `ScriptError` naming the file and line.
    """
    return ScriptedLLM.from_yaml(script_path(spec), counter=counter, repeat=True, follow=True)


def script_path(spec: str) -> Path:
    """The script file `TOKENDANCE_LLM` names: a path, or a bundled script's bare name."""
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
    return path


def check_llm_spec(spec: str | None) -> str | None:
    """What is wrong with `TOKENDANCE_LLM` (a malformed script: its file and line), if any."""
    if not spec:
        return None
    try:
        load_llm_spec(spec)
    except ValueError as e:  # ScriptError included
        return f"TOKENDANCE_LLM={spec}: {e}"
    return None
