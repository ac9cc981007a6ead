"""A run starts from a snapshot of the folded log and the events after it, and builds
exactly the request a fold of the whole log builds."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from uuid import UUID, uuid4

import pytest

from adapters.bootstrap.in_memory import in_memory_sessions
from application import context_snapshots
from application.bridge import SyncBridge
from application.context_snapshots import InMemoryContextSnapshots, SegmentCache, Stored
from application.run_state import RunState
from application.sessions import SessionService
from application.snapshot_port import KeptSnapshot, SnapshotWrite
from application.steps import CallRequest, CallsStep, ResultStep, TurnStep
from domain.budgets import BillingScope
from domain.context import ContextBuilder, ContextFrame
from domain.conversation import ModelRequest, ModelTurn, TextBlock, ToolSpec, ToolUseBlock, Usage
from domain.events import SessionEvent
from domain.ledger import Ledger
from domain.values import ModelCallCost
from tests.fakes.long_session import long_session, start

FRAME = ContextFrame("You are a test.", (ToolSpec("search", "Search.", {"type": "object"}),))


def full_fold(events: Sequence[SessionEvent]) -> tuple[ModelRequest, int]:
    builder = ContextBuilder(FRAME)
    for e in events:
        builder.apply(e)
    return builder.request_and_estimate()


def answers(ledger: Ledger, run_id: UUID | None) -> tuple[object, ...]:
    """What the loop asks of a ledger."""
    return (
        ledger.settings, ledger.workspace_id, ledger.owner_id, ledger.started_runs,
        ledger.turns_by_run, ledger.last_turn_version, ledger.tokens_used,
        ledger.stalled_turns, ledger.failures, ledger.skill, ledger.source_numbers,
        ledger.sources, ledger.done_steps, ledger.active_run, ledger.billing,
        ledger.tool_uses_of_last_turn(run_id) if run_id else None,
    )  # fmt: skip


def test_request_from_snapshot_and_tail_equals_the_full_fold_at_every_point() -> None:
    sessions = in_memory_sessions()
    sid = long_session(sessions, 60, compact_every=17)
    events = list(sessions.session_events(sid))
    run_id = next(iter(Ledger.of(events).started_runs))
    store, stored = InMemoryContextSnapshots(), Stored()
    compared = 0
    for j in range(1, len(events), 5):
        builder, ledger = ContextBuilder(FRAME), Ledger()
        for e in events[:j]:
            builder.apply(e)
            ledger.apply(e)
        builder.request()  # counted or not when kept: the same either way
        # Kept as runs keep them, one after the other: each adds a segment to the last.
        write, stored = context_snapshots.encode(
            j, ledger, builder.folded(), sessions.mapper, stored
        )
        store.keep(sid, write)
        for k in sorted({j, j + 1, j + 4, j + 19, len(events)}):
            if k > len(events):
                continue
            kept = store.latest(sid)
            assert kept is not None
            folded = context_snapshots.decode(kept, sessions.mapper)
            assert folded is not None and folded.version == j and folded.stored == stored
            restored = ContextBuilder(FRAME)
            restored.restore(folded.context)
            for e in events[j:k]:
                restored.apply(e)
                folded.ledger.apply(e)
            assert restored.request_and_estimate() == full_fold(events[:k]), (j, k)
            assert answers(folded.ledger, run_id) == answers(Ledger.of(events[:k]), run_id)
            compared += 1
    assert compared > 50
    kinds = {type(e).__name__ for e in events}
    assert {"ContextCompacted", "SourceRecorded", "PlanUpdated", "SkillActivated"} <= kinds
    # Only the newest epoch's segments are left: the compactions dropped the others.
    epochs = {epoch for epoch, _ in store.segment_bytes(sid)}
    assert epochs == {stored.epoch} and stored.epoch > 0


class Watching:
    """A store that remembers how many segments each read handed out."""

    def __init__(self, inner: InMemoryContextSnapshots) -> None:
        self.inner, self.handed = inner, list[int]()

    def latest(self, session_id: UUID, have: Collection[int] = ()) -> KeptSnapshot | None:
        kept = self.inner.latest(session_id, have)
        self.handed.append(len(kept.segments) if kept else 0)
        return kept

    def keep(self, session_id: UUID, snapshot: SnapshotWrite) -> None:
        self.inner.keep(session_id, snapshot)


def test_a_start_reads_only_the_segments_its_process_has_not_read() -> None:
    sessions = in_memory_sessions()
    sid = long_session(sessions, 30)
    events = list(sessions.session_events(sid))
    store, stored = Watching(InMemoryContextSnapshots()), Stored()
    cache, tiny = SegmentCache(), SegmentCache(max_bytes=1)  # tiny holds none
    for j in (20, 50, 80, len(events)):
        builder, ledger = ContextBuilder(FRAME), Ledger.of(events[:j])
        for e in events[:j]:
            builder.apply(e)
        builder.request()
        write, stored = context_snapshots.encode(
            j, ledger, builder.folded(), sessions.mapper, stored
        )
        store.keep(sid, write)
        for held in (cache, tiny):
            folded = context_snapshots.read(store, sid, sessions.mapper, held)
            assert folded is not None and folded.version == j
            restored = ContextBuilder(FRAME)
            restored.restore(folded.context)
            assert restored.request_and_estimate() == full_fold(events[:j])
    # With the segments held, each read fetched the one segment added since; without,
    # every segment each time.
    assert store.handed[0::2] == [1, 1, 1, 1]
    assert store.handed[1::2] == [1, 2, 3, 4]


def folded_snapshot(steps: int) -> tuple[SessionService, SnapshotWrite]:
    sessions = in_memory_sessions()
    sid = long_session(sessions, steps)
    events = list(sessions.session_events(sid))
    builder, ledger = ContextBuilder(FRAME), Ledger.of(events)
    for e in events:
        builder.apply(e)
    builder.request()
    write, _ = context_snapshots.encode(len(events), ledger, builder.folded(), sessions.mapper)
    return sessions, write


def test_a_snapshot_that_cannot_be_read_is_ignored_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sessions, write = folded_snapshot(5)
    assert write.segment is not None
    segments = {write.segment.through: write.segment.data}
    assert context_snapshots.decode(KeptSnapshot(9, write.head, segments), sessions.mapper)
    other_format = write.head.replace(b"[%d," % context_snapshots.FORMAT, b"[999,", 1)
    unreadable = [
        KeptSnapshot(9, b"not a snapshot", segments),
        KeptSnapshot(9, other_format, segments),
        KeptSnapshot(9, write.head, {}),  # its segment is missing
        KeptSnapshot(9, write.head, {write.segment.through: b"[4, [], [1, 2, 3]]"}),  # not its own
        KeptSnapshot(9, write.head, {write.segment.through: b"{]"}),
    ]
    for kept in unreadable:
        caplog.clear()
        assert context_snapshots.decode(kept, sessions.mapper) is None, kept
        assert "ignored" in caplog.text


def turn_and_result(i: int, run_id: UUID) -> tuple[TurnStep, ResultStep]:
    use = f"r{i}"
    turn = ModelTurn(
        (TextBlock(f"turn {i}"), ToolUseBlock(use, "search", {"query": str(i)})),
        "tool_use", Usage(10, 2), "m",
    )  # fmt: skip
    calls = CallsStep((CallRequest(use, "search", {"query": str(i)}),))
    step = TurnStep(run_id, turn, 1, ModelCallCost(), calls=calls)
    return step, ResultStep(use, "success", f"found {i}")


async def run_steps(state: RunState, sessions: SessionService, run_id: UUID, n: int) -> None:
    for i in range(n):
        turn, result = turn_and_result(i, run_id)
        await state.record(sessions.record_turn_and_calls, state.session_id, turn)
        await state.record(sessions.record_result_and_effects, state.session_id, result)


async def test_a_run_starts_from_the_snapshot_a_run_kept() -> None:
    sessions, bridge, snapshots = in_memory_sessions(), SyncBridge(2), InMemoryContextSnapshots()
    try:
        sid, run_id = start(sessions)
        first = RunState(sid, run_id, sessions, bridge, snapshots, snapshot_every=10)
        await first.load()
        first.follow(ContextBuilder(FRAME))
        await run_steps(first, sessions, run_id, 40)  # 3 events a step
        kept = snapshots.latest(sid)
        assert kept is not None and kept.version > 100

        again = RunState(sid, run_id, sessions, bridge, snapshots, snapshot_every=10)
        await again.load()
        again.follow(ContextBuilder(FRAME))
        assert len(again.log) < 10  # the tail after the snapshot, not the whole log
        events = list(sessions.session_events(sid))
        assert again.context is not None
        assert again.context.request_and_estimate() == full_fold(events)
        assert len(await again.full_log()) == len(events)
        assert await again.last_user_message() == "Find out how heat pumps work in the cold."
    finally:
        bridge.close()


async def test_a_run_with_an_unreadable_snapshot_folds_the_whole_log() -> None:
    sessions, bridge, snapshots = in_memory_sessions(), SyncBridge(2), InMemoryContextSnapshots()
    try:
        sid, run_id = start(sessions)
        snapshots.keep(sid, SnapshotWrite(3, 0, b'{"format": 0}', None))
        state = RunState(sid, run_id, sessions, bridge, snapshots)
        await state.load()
        state.follow(ContextBuilder(FRAME))
        events = list(sessions.session_events(sid))
        assert len(state.log) == len(events)
        assert state.context is not None
        assert state.context.request_and_estimate() == full_fold(events)
    finally:
        bridge.close()


def test_the_ledgers_active_run_and_billing_are_the_aggregates_at_every_version() -> None:
    """A run starts from the log it read, not from the aggregate: the two must agree on
    which run is active (through completion, failure and a user's stop) and who pays."""
    sessions = in_memory_sessions()
    sid, run_id = start(sessions)
    sessions.complete_run(sid, run_id)
    failing, stopped = uuid4(), uuid4()
    sessions.submit_message(sid, "again", failing)
    sessions.fail_run(sid, failing, "the model is down", "LLM_UNAVAILABLE")
    sessions.submit_message(sid, "and again", stopped)
    sessions.start_run(sid, stopped, "test-worker")
    sessions.stop_active_run(sid, "stopped by user")
    events = list(sessions.session_events(sid))
    ledger = Ledger()
    seen: set[UUID | None] = set()
    for e in events:
        ledger.apply(e)
        session = sessions.get_session(sid, version=e.originator_version)
        assert ledger.active_run == session.active_run, e
        assert ledger.billing == BillingScope(
            session.organization_id, session.team_id, session.workspace_id, session.owner_id
        )
        seen.add(ledger.active_run)
    assert seen == {None, run_id, failing, stopped}
