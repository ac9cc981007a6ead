"""Deterministic replay: run the engine again on a session's recorded inputs.

The recorded log is the oracle. The user's inputs (messages, run requests, approvals,
stops) are applied again as commands; the model answers with the recorded turns (or
the recorded failure); tools with external effects answer with their recorded results,
while built-in tools, which only write events, run for real; a skill's time runs out
where the log says it did (`application.replay_oracle` answers for the log). The engine
must then produce the stored event sequence; the first difference is reported. No model
is called and no tool touches the world.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields, replace
from typing import assert_never
from uuid import UUID

from application.manual_tools import ManualTools
from application.memory_recall import RecordedRecall, RunMemory
from application.ports import LLM
from application.replay_oracle import (
    Exhausted,
    ReplayClock,
    ReplayLLM,
    ReplayMcp,
    ReplayToolCalls,
    fallbacks_of,
    model_of,
)
from application.runner import AgentRunner
from application.runs import internal_failure
from application.sessions import SessionService
from domain.events import SessionEvent
from domain.session import AgentSession as S
from domain.session_decks import DeckLog as D
from domain.values import MANUAL_PREFIX

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


def describe(e: SessionEvent | None) -> str:
    if e is None:
        return "(nothing)"
    payload = {f.name: getattr(e, f.name) for f in fields(e) if f.name not in IGNORED}
    return f"{type(e).__qualname__} {dict(sorted(payload.items()))}"


ReplayEngine = Callable[[LLM], AgentRunner]
"""Builds the engine a replay drives, around the given model, on a new empty store
(`adapters.bootstrap.replay_engine`); the replay closes its bridge when done."""


async def replay(stored: Sequence[SessionEvent], *, engine: ReplayEngine) -> ReplayReport:
    """Replay `stored` (one session's events, in order) and compare."""
    sid = stored[0].originator_id

    def position() -> int:
        return target.get_session(sid).version

    llm = ReplayLLM(stored, position)
    runner = engine(llm)
    target, bridge = runner.sessions, runner.bridge
    # What no engine produced: the start, and for a fork the log it was given.
    target.events.put(list(stored[: _given(stored)]))
    target.before_change = _claims_of(stored)
    runner.clock = ReplayClock(stored, position)
    runner.model_calls.fallback = fallbacks_of(stored)
    configured = model_of(stored)
    if configured is not None:  # asked of the model the original engine was set up with
        runner.settings = replace(runner.settings, model=configured)
        runner.model_calls.default_model = configured
    runner.mcp = ReplayMcp(stored, position)
    runner.tool_calls = ReplayToolCalls(runner.tools, runner.tool_calls.blobs, stored)
    runner.tool_calls.mcp = runner.mcp
    # Recalled as recorded, and nothing kept: the memories live outside the session.
    runner.memory = RunMemory(RecordedRecall(stored), None)
    try:
        while position() < len(stored):
            before = position()
            await _apply_next_input(target, sid, stored, before, runner, llm)
            produced = list(target.session_events(sid))
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


def _claims_of(stored: Sequence[SessionEvent]) -> Callable[[S], None]:
    """What applies a recorded claim (a `RunStarted` of a run already started: a worker
    taking the run over from one that died) when the replayed log reaches it, as the
    input it was: no single engine makes one."""
    started: set[UUID] = set()
    claims: dict[int, S.RunStarted] = {}
    for e in stored:
        if isinstance(e, S.RunStarted):
            if e.run_id in started:
                claims[e.originator_version] = e
            started.add(e.run_id)

    def apply(session: S) -> None:
        while (claim := claims.get(session.version + 1)) is not None:
            session.start_run(claim.run_id, claim.worker)

    return apply


def _given(stored: Sequence[SessionEvent]) -> int:
    start = stored[0]
    parent_version = start.parent_version if isinstance(start, S.SessionStarted) else None
    if not parent_version:
        return 1
    for e in stored[parent_version:]:
        if isinstance(e, S.RunStopped) and e.reason.startswith("forked at"):
            return e.originator_version
        if not isinstance(e, S.ToolResultRecorded):
            break
    return parent_version


async def _apply_next_input(
    target: SessionService,
    sid: UUID,
    stored: Sequence[SessionEvent],
    at: int,
    runner: AgentRunner,
    llm: ReplayLLM,
) -> None:
    e = stored[at]
    manual = _manual_call(target, sid, e)
    run_after = _apply_input(target, sid, stored, at)
    if manual is not None:  # a person's call (`POST /mcp/tools/{name}/execute`), not a run's
        by_hand = ManualTools(runner.tool_calls, target, runner.bridge)
        if isinstance(e, S.ToolCallRequested):
            await by_hand.execute(sid, e.tool, e.args, tool_use_id=manual)
        else:
            await by_hand.resume(sid, manual)  # its approval was just answered
        return
    if run_after is not None:
        recovering = isinstance(e, S.RunStarted)
        await _drive(runner, llm, sid, run_after, recovering=recovering)


def _apply_input(
    target: SessionService, sid: UUID, stored: Sequence[SessionEvent], at: int
) -> UUID | None:
    """Apply the user's input recorded at `at`, if it is one; the run to drive after it."""
    e = stored[at]
    if _is_stop(e) and target.get_session(sid).active_run:
        stop = next(s for s in stored[at:] if isinstance(s, S.RunStopped))
        target.stop_active_run(sid, stop.reason)
        return None
    match e:
        case S.UserMessageAppended(text=text, attachments=attachments, idempotency_key=key):
            target.append_user_message(
                sid,
                text,
                attachments=attachments,
                idempotency_key=key,
                files=e.files,
                author_id=e.author_id,
            )
        case S.RunRequested(run_id=run_id, requested_by=by, api_key_id=key):
            target.request_run(sid, run_id, requested_by=by, api_key_id=key)
            return run_id
        case S.ConfirmationGiven(action_id=action_id, approved=approved):
            target.give_confirmation(sid, action_id, approved, e.feedback, e.by)
            session = target.get_session(sid)
            if session.active_run is not None and not session.pending_confirmations:
                return session.active_run
        case S.SessionRenamed(title=title):
            target.rename_session(sid, title)
        case S.SessionArchived():
            target.archive_session(sid)
        case S.SessionCompleted():
            target.complete_session(sid)
        case S.RunStarted(run_id=run_id):
            return run_id  # requested, then the process died
        case S.SlideRewritten(tool_use_id=None):
            target.copy_deck_change(sid, e)  # a user's regeneration, as it was recorded
        case (
            S.SessionStarted() | S.AssistantTurnRecorded() | S.ToolCallRequested()
            | S.ToolResultRecorded() | S.ConfirmationRequested() | S.PlanUpdated()
            | S.FindingRecorded() | S.ProgressNoted() | S.StrikeRecorded()
            | S.RebootRequested() | S.ContextCompacted() | S.ArtifactCreated() | D.DeckEvent()
            | S.RunCompleted() | S.RunFailed() | S.RunStopped() | S.BudgetThresholdReached()
            | S.SourceRecorded() | S.SkillActivated() | S.MemoriesRecalled()
            | S.ModelFallbackUsed() | S.McpToolsetChanged()
        ):  # fmt: skip
            pass  # the engine's own output: it must produce these by itself
        case _:
            assert_never(e)
    return None


def _manual_call(target: SessionService, sid: UUID, e: SessionEvent) -> str | None:
    """The tool use id of a call made by hand that `e` requests or answers, if it is one."""
    match e:
        case S.ToolCallRequested(tool_use_id=tool_use_id):
            pass
        case S.ConfirmationGiven(action_id=action_id):
            tool_use_id = target.get_session(sid).pending_confirmations.get(action_id, "")
        case _:
            return None
    return tool_use_id if tool_use_id.startswith(MANUAL_PREFIX) else None


def _is_stop(e: SessionEvent) -> bool:
    return isinstance(e, S.RunStopped) or (
        isinstance(e, S.ToolResultRecorded) and e.error == "stopped"
    )


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
    except (asyncio.CancelledError, Exhausted):
        pass
    except Exception as e:
        runner.sessions.fail_run(sid, run_id, *internal_failure(e))
