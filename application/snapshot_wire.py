"""How a context snapshot writes what it holds (`application/context_snapshots.py`): the
content blocks and the ledger as msgspec structs, and the events in them as the store
encodes them (the session's mapper, upcasts included)."""

from __future__ import annotations

from typing import assert_never
from uuid import UUID

import msgspec
from eventsourcing.persistence import Mapper, StoredEvent

from domain.conversation import (
    ContentBlock,
    ModelCitation,
    RedactedThinkingBlock,
    Role,
    SearchResultBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from domain.events import SessionEvent, as_session_event
from domain.ledger import Ledger
from domain.session import AgentSession as S
from domain.sources import NumberedSource

_Triple = tuple[str, str, str]


class _Text(msgspec.Struct, tag="text", array_like=True):
    text: str
    citations: list[_Triple]


class _Thinking(msgspec.Struct, tag="thinking", array_like=True):
    thinking: str
    signature: str


class _Redacted(msgspec.Struct, tag="redacted_thinking", array_like=True):
    data: str


class _ToolUse(msgspec.Struct, tag="tool_use", array_like=True):
    id: str
    name: str
    input: dict[str, object]


class _ToolResult(msgspec.Struct, tag="tool_result", array_like=True):
    tool_use_id: str
    content: str
    is_error: bool
    results: list[_Triple]


Block = _Text | _Thinking | _Redacted | _ToolUse | _ToolResult


class EventState(msgspec.Struct, array_like=True):
    originator_id: UUID
    version: int
    topic: str
    state: bytes


class LedgerState(msgspec.Struct, array_like=True):
    events: list[EventState]  # the start, the live calls, the last turns, the active skill
    started_runs: list[UUID]
    turns_by_run: list[tuple[UUID, int]]
    last_turn_version: int
    tokens_used: int
    stalled_turns: int
    failures: list[tuple[str, str, int]]
    sources: list[tuple[int, str, str, str, str | None]]
    done: list[str]
    active_run: UUID | None
    fallback_models: list[tuple[UUID, str]]


def encode_ledger(ledger: Ledger, mapper: Mapper[UUID]) -> LedgerState:
    live = ledger.live()
    events: list[SessionEvent] = [*live.requested.values(), *live.results.values()]
    events += [*live.confirmations.values(), *live.answers.values()]
    events += [*live.last_turn_by_run.values(), *([live.skill] if live.skill else [])]
    events += [live.mcp_toolset] if live.mcp_toolset else []
    events.sort(key=lambda e: e.originator_version)
    state = LedgerState(
        [encode_event(e, mapper) for e in events], sorted(live.started_runs, key=str),
        list(live.turns_by_run.items()), live.last_turn_version, live.tokens_used,
        live.stalled_turns, [(t, s, n) for (t, s), n in live.failures.items()],
        [(s.number, s.url, s.title, s.snippet, s.blob_ref) for s in live.sources.values()],
        sorted(live.done_steps), live.active_run, list(live.fallback_models.items()),
    )  # fmt: skip
    if ledger.started is not None:
        state.events.insert(0, encode_event(ledger.started, mapper))
    return state


def decode_ledger(raw: LedgerState, mapper: Mapper[UUID]) -> Ledger:
    ledger = Ledger()
    for stored in raw.events:
        e = decode_event(stored, mapper)
        match e:
            case S.SessionStarted() | S.ConfirmationRequested() | S.ConfirmationGiven():
                ledger.apply(e)
            case S.ToolCallRequested(tool_use_id=use, tool=tool):
                ledger.tools_by_use[use], ledger.requested[use] = tool, e
            case S.ToolResultRecorded(tool_use_id=use):
                ledger.results[use] = e
            case S.AssistantTurnRecorded(run_id=run_id):
                ledger.last_turn_by_run[run_id] = e
            case S.SkillActivated():
                ledger.skill = e
            case S.McpToolsetChanged():
                ledger.mcp_toolset = e
            case _:
                raise ValueError(f"not a snapshot's event: {type(e).__qualname__}")
    ledger.started_runs = set(raw.started_runs)
    ledger.turns_by_run = dict(raw.turns_by_run)
    ledger.last_turn_version, ledger.tokens_used = raw.last_turn_version, raw.tokens_used
    ledger.stalled_turns = raw.stalled_turns
    ledger.failures = {(t, s): n for t, s, n in raw.failures}
    ledger.sources = {n: NumberedSource(n, url, t, sn, ref) for n, url, t, sn, ref in raw.sources}
    ledger.source_numbers = {s.url: n for n, s in sorted(ledger.sources.items())}
    ledger.restore_done(frozenset(raw.done))
    ledger.active_run = raw.active_run
    ledger.fallback_models = dict(raw.fallback_models)
    return ledger


def ledger_sources(raw: LedgerState) -> list[tuple[int, NumberedSource]]:
    return [(n, NumberedSource(n, url, t, sn, ref)) for n, url, t, sn, ref in raw.sources]


def role(raw: str) -> Role:
    if raw not in ("user", "assistant"):
        raise ValueError(f"not a role: {raw}")
    return "user" if raw == "user" else "assistant"


def encode_event(e: SessionEvent, mapper: Mapper[UUID]) -> EventState:
    stored = mapper.to_stored_event(e)
    return EventState(e.originator_id, stored.originator_version, stored.topic, stored.state)


def decode_event(raw: EventState, mapper: Mapper[UUID]) -> SessionEvent:
    stored = StoredEvent(raw.originator_id, raw.version, raw.topic, raw.state)
    return as_session_event(mapper.to_domain_event(stored))


def encode_block(b: ContentBlock) -> Block:
    match b:
        case TextBlock(text=text, citations=citations):
            return _Text(text, [(c.source, c.title, c.cited_text) for c in citations])
        case ThinkingBlock(thinking=thinking, signature=signature):
            return _Thinking(thinking, signature)
        case RedactedThinkingBlock(data=data):
            return _Redacted(data)
        case ToolUseBlock(id=id_, name=name, input=input_):
            return _ToolUse(id_, name, input_)
        case ToolResultBlock(tool_use_id=use, content=content, is_error=err, results=results):
            return _ToolResult(use, content, err, [(r.source, r.title, r.text) for r in results])
        case SearchResultBlock():
            raise ValueError("a search result stands in a tool result, not in a turn")
        case _:
            assert_never(b)


def decode_block(raw: Block) -> ContentBlock:
    match raw:
        case _Text(text=text, citations=citations):
            return TextBlock(text, tuple(ModelCitation(*c) for c in citations))
        case _Thinking(thinking=thinking, signature=signature):
            return ThinkingBlock(thinking, signature)
        case _Redacted(data=data):
            return RedactedThinkingBlock(data)
        case _ToolUse(id=id_, name=name, input=input_):
            return ToolUseBlock(id_, name, input_)
        case _ToolResult(tool_use_id=use, content=content, is_error=err, results=results):
            shown = tuple(SearchResultBlock(*r) for r in results)
            return ToolResultBlock(use, content, err, shown)
        case _:
            assert_never(raw)
