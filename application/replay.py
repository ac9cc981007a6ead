"""Deterministic replay: run the engine again on a session's recorded inputs.

The recorded log is the oracle. The user's inputs (messages, run requests, approvals,
stops) are applied again as commands; the model answers with the recorded turns (or
the recorded failure); tools with external effects answer with their recorded results,
while built-in tools, which only write events, run for real. The engine must then
produce the stored event sequence; the first difference is reported. No model is
called and no tool touches the world.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from uuid import UUID

from eventsourcing.domain import AggregateEvent

from application.bridge import SyncBridge
from application.ports import BlobStore, LLMError, TokenCounter
from application.run_state import RunState
from application.runner import AgentRunner, EngineSettings
from application.runs import internal_failure
from application.sessions import SessionService
from application.tool_calls import ToolCalls
from application.tools.registry import ToolRegistry
from domain.context import content_block
from domain.conversation import ModelRequest, ModelTurn, StreamItem, TextBlock, Usage

# Measured, not decided: they differ on every run and say nothing about behaviour.
IGNORED = {"timestamp", "latency_ms", "duration_ms", "worker"}


@dataclass(frozen=True)
class Divergence:
    version: int
    expected: str
    got: str


@dataclass(frozen=True)
class ReplayReport:
    events: int
    divergence: Divergence | None

    @property
    def identical(self) -> bool:
        return self.divergence is None


def describe(e: AggregateEvent | None) -> str:
    if e is None:
        return "(nothing)"
    payload = {k: v for k, v in sorted(e.__dict__.items()) if k not in IGNORED}
    return f"{type(e).__name__} {payload}"


class _Exhausted(Exception):
    pass


class ReplayLLM:
    """Answers each model call with what the stored log says came next."""

    def __init__(self, stored: Sequence[AggregateEvent], position: Callable[[], int]) -> None:
        self.stored = stored
        self.position = position
        self.exhausted = asyncio.Event()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        at = self.position()
        expected = self.stored[at] if at < len(self.stored) else None
        kind = type(expected).__name__
        if kind == "AssistantTurnRecorded":
            yield _turn(expected)  # type: ignore[arg-type]
        elif kind == "ContextCompacted" and not request.tools:
            yield ModelTurn((TextBlock(expected.summary),), "end_turn", Usage(), "replay")  # type: ignore[union-attr]
        elif kind == "RunFailed":
            error = LLMError(expected.reason)  # type: ignore[union-attr]
            error.code = expected.error_code  # type: ignore[union-attr]
            raise error
        else:  # the original was stopped here, mid-stream: wait to be cancelled the same way
            self.exhausted.set()
            await asyncio.Event().wait()


def _turn(e: AggregateEvent) -> ModelTurn:
    blocks = tuple(content_block(b) for b in e.content)  # type: ignore[attr-defined]
    usage = Usage(e.input_tokens, e.output_tokens, e.cache_read_tokens, e.cache_write_tokens)  # type: ignore[attr-defined]
    return ModelTurn(blocks, e.stop_reason, usage, e.model)  # type: ignore[arg-type, attr-defined]


class ReplayToolCalls(ToolCalls):
    """Built-in tools run again; every other tool answers with its recorded result."""

    def __init__(
        self, tools: ToolRegistry, blobs: BlobStore, stored: Sequence[AggregateEvent]
    ) -> None:
        super().__init__(tools, blobs)
        results = [e for e in stored if type(e).__name__ == "ToolResultRecorded"]
        self.results = {getattr(e, "tool_use_id"): e for e in results}  # noqa: B009

    async def _execute(
        self, state: RunState, tool_use_id: str, name: str, raw_args: dict[str, object]
    ) -> None:
        if self.tools.get(name).replayable:
            await super()._execute(state, tool_use_id, name, raw_args)
            return
        recorded = self.results.get(tool_use_id)
        if recorded is None:
            raise _Exhausted(f"no recorded result for tool call {tool_use_id}")
        if recorded.status == "error":  # type: ignore[attr-defined]
            # Through the same path as a live failure, so strikes are counted again.
            await self._fail(state, tool_use_id, name, recorded.error, recorded.duration_ms)  # type: ignore[attr-defined]
            return
        await state.record(
            state.sessions.record_tool_result,
            state.session_id, tool_use_id, recorded.status, recorded.summary,  # type: ignore[attr-defined]
            blob_ref=recorded.blob_ref, error=recorded.error, duration_ms=recorded.duration_ms,  # type: ignore[attr-defined]
        )  # fmt: skip


async def replay(
    stored: Sequence[AggregateEvent],
    *,
    tools: ToolRegistry,
    blobs: BlobStore,
    counter: TokenCounter,
    settings: EngineSettings,
) -> ReplayReport:
    """Replay `stored` (one session's events, in order) and compare."""
    target = SessionService(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    bridge = SyncBridge(2)
    sid = stored[0].originator_id
    # What no engine produced: the start, and for a fork the log it was given.
    target.events.put(list(stored[: _given(stored)]))

    def position() -> int:
        return target.get_session(sid).version

    llm = ReplayLLM(stored, position)

    class _Null:
        async def publish(self, session_id: UUID, delta: object) -> None:
            pass

    runner = AgentRunner(
        sessions=target, bridge=bridge, llm=llm, tools=tools, blobs=blobs,
        counter=counter, deltas=_Null(), settings=settings,
    )  # fmt: skip
    runner.tool_calls = ReplayToolCalls(tools, blobs, stored)
    try:
        while position() < len(stored):
            before = position()
            await _apply_next_input(target, sid, stored, before, runner, llm)
            produced: list[AggregateEvent] = list(target.session_events(sid))  # type: ignore[arg-type]
            for e_stored, e_new in zip(stored, produced, strict=False):
                if describe(e_stored) != describe(e_new):
                    return ReplayReport(
                        len(stored),
                        Divergence(
                            e_stored.originator_version, describe(e_stored), describe(e_new)
                        ),
                    )
            if position() == before:
                at = stored[before]
                return ReplayReport(
                    len(stored), Divergence(at.originator_version, describe(at), "(nothing)")
                )
        return ReplayReport(len(stored), None)
    finally:
        bridge.close()


def _given(stored: Sequence[AggregateEvent]) -> int:
    parent_version = getattr(stored[0], "parent_version", None)
    if not parent_version:
        return 1
    given = parent_version
    for e in stored[parent_version:]:
        if type(e).__name__ == "RunStopped" and e.reason.startswith("forked at"):  # type: ignore[attr-defined]
            return e.originator_version
        if type(e).__name__ != "ToolResultRecorded":
            break
    return given


async def _apply_next_input(
    target: SessionService,
    sid: UUID,
    stored: Sequence[AggregateEvent],
    at: int,
    runner: AgentRunner,
    llm: ReplayLLM,
) -> None:
    e = stored[at]
    kind = type(e).__name__
    run_after: UUID | None = None
    if kind == "UserMessageAppended":
        message = e.__dict__
        target.append_user_message(
            sid,
            message["text"],
            attachments=message["attachments"],
            idempotency_key=message["idempotency_key"],
        )
    elif kind == "RunRequested":
        target.request_run(sid, e.run_id)  # type: ignore[attr-defined]
        run_after = e.run_id  # type: ignore[attr-defined]
    elif kind == "ConfirmationGiven":
        target.give_confirmation(sid, e.action_id, e.approved, e.feedback, e.by)  # type: ignore[attr-defined]
        session = target.get_session(sid)
        if session.active_run is not None and not session.pending_confirmations:
            run_after = session.active_run
    elif _is_stop(e) and target.get_session(sid).active_run:
        stop = next(s for s in stored[at:] if type(s).__name__ == "RunStopped")
        target.stop_active_run(sid, stop.reason)  # type: ignore[attr-defined]
    elif kind == "SessionRenamed":
        target.rename_session(sid, e.title)  # type: ignore[attr-defined]
    elif kind == "SessionArchived":
        target.archive_session(sid)
    elif kind == "RunStarted":
        run_after = e.run_id  # type: ignore[attr-defined]  # requested, then the process died
    if run_after is not None:
        await _drive(runner, llm, sid, run_after, recovering=kind == "RunStarted")


def _is_stop(e: AggregateEvent) -> bool:
    kind = type(e).__name__
    return kind == "RunStopped" or (kind == "ToolResultRecorded" and e.error == "stopped")  # type: ignore[attr-defined]


async def _drive(
    runner: AgentRunner, llm: ReplayLLM, sid: UUID, run_id: UUID, *, recovering: bool
) -> None:
    llm.exhausted.clear()
    task = asyncio.create_task(runner.run(sid, run_id, recovering=recovering))
    waiter = asyncio.create_task(llm.exhausted.wait())
    await asyncio.wait([task, waiter], return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    if not task.done():
        task.cancel()  # the original was stopped (or crashed) here
    try:
        await task
    except (asyncio.CancelledError, _Exhausted):
        pass
    except Exception as e:
        runner.sessions.fail_run(sid, run_id, *internal_failure(e))
