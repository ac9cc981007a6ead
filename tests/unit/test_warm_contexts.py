"""A run hands its fold of the session to the session's next run in the same process,
which then reads only the events after it and builds exactly what a fold of the whole
log builds; a fold that may have missed an event is never handed over."""

from __future__ import annotations

from contextvars import Context
from uuid import UUID, uuid4

import pytest

from adapters.bootstrap.in_memory import in_memory_sessions
from application.bridge import SyncBridge
from application.context_snapshots import InMemoryContextSnapshots
from application.run_state import RunState
from application.sessions import SessionService
from application.warm_contexts import Warm, WarmContexts
from domain.context import ContextBuilder, FoldedContext
from domain.errors import ClaimLost
from domain.ledger import Ledger
from domain.session import AgentSession as S
from tests.fakes.long_session import start, step
from tests.unit.test_context_snapshots import FRAME, answers, full_fold, run_steps


async def started(
    sessions: SessionService, bridge: SyncBridge, warm: WarmContexts, sid: UUID, run_id: UUID
) -> RunState:
    state = RunState(sid, run_id, sessions, bridge, InMemoryContextSnapshots(), 100, warm)
    await state.load()
    state.follow(ContextBuilder(FRAME))
    return state


async def test_the_next_run_reads_only_the_events_after_the_last_run_and_folds_the_same() -> None:
    sessions, bridge, warm = in_memory_sessions(), SyncBridge(2), WarmContexts()
    try:
        sid, run_id = start(sessions)
        for i in range(8):  # sources, a plan, a failure, a skill, a compaction
            step(sessions, sid, run_id, i, compact_every=5)
        first = await started(sessions, bridge, warm, sid, run_id)
        await run_steps(first, sessions, run_id, 3)
        await first.record(sessions.complete_run, sid, run_id)
        first.hand_over()
        assert len(warm) == 1 and first.context is None

        for n in range(3):  # message after message, each run taking the last one's fold
            run_id = uuid4()
            sessions.submit_message(sid, f"and now {n}?", run_id)
            state = await started(sessions, bridge, warm, sid, run_id)
            assert len(warm) == 0  # taken, not shared
            assert [type(e) for e in state.log] == [S.UserMessageAppended, S.RunRequested]
            events = list(sessions.session_events(sid))
            assert state.version == len(events)
            assert state.context is not None
            assert state.context.request_and_estimate() == full_fold(events)
            assert answers(state.ledger, run_id) == answers(Ledger.of(events), run_id)
            assert await state.last_user_message() == f"and now {n}?"
            await state.record(sessions.start_run, sid, run_id, "test-worker")
            await run_steps(state, sessions, run_id, 2)
            await state.record(sessions.complete_run, sid, run_id)
            mine = await state.this_run()
            assert isinstance(mine[0], S.RunStarted) and len(mine) == 8
            assert len(state.log) == 10  # what it asked was in the tail: no read of the head
            state.hand_over()
        events = list(sessions.session_events(sid))
        again = await started(sessions, bridge, warm, sid, run_id)
        assert again.log == [] and again.version == len(events)
        assert len(await again.full_log()) == len(events)
    finally:
        bridge.close()


async def test_a_fold_that_missed_another_writers_event_is_not_handed_over() -> None:
    sessions, bridge, warm = in_memory_sessions(), SyncBridge(2), WarmContexts()
    try:
        sid, run_id = start(sessions)
        state = await started(sessions, bridge, warm, sid, run_id)
        await run_steps(state, sessions, run_id, 1)
        sessions.rename_session(sid, "renamed while the run works")  # not in this run's fold
        await run_steps(state, sessions, run_id, 1)
        state.hand_over()
        assert len(warm) == 0

        cold = await started(sessions, bridge, warm, sid, run_id)
        events = list(sessions.session_events(sid))
        assert len(cold.log) == len(events)
        assert cold.context is not None and cold.context.request_and_estimate() == full_fold(events)
    finally:
        bridge.close()


async def test_a_run_resumed_from_a_fold_taken_after_its_start_still_sees_its_own_events() -> None:
    sessions, bridge, warm = in_memory_sessions(), SyncBridge(2), WarmContexts()
    try:
        sid, run_id = start(sessions)
        first = await started(sessions, bridge, warm, sid, run_id)
        await first.record(sessions.record_finding, sid, "Heat pumps work at -20 C.", [])
        first.hand_over()  # as a run that waits for an approval
        resumed = await started(sessions, bridge, warm, sid, run_id)
        assert resumed.log == []
        mine = await resumed.this_run()
        assert isinstance(mine[0], S.RunStarted) and mine[0].run_id == run_id
        assert any(isinstance(e, S.FindingRecorded) for e in mine)
    finally:
        bridge.close()


def test_only_the_newest_fold_of_the_most_recent_sessions_is_kept() -> None:
    warm = WarmContexts(capacity=2)
    a, b, c = uuid4(), uuid4(), uuid4()
    newer = Warm(9, 0, Ledger(), FoldedContext())
    warm.keep(a, newer)
    warm.keep(a, Warm(5, 0, Ledger(), FoldedContext()))  # a late run's older fold
    warm.keep(b, Warm(3, 0, Ledger(), FoldedContext()))
    warm.keep(c, Warm(4, 0, Ledger(), FoldedContext()))  # a was used least recently
    assert len(warm) == 2 and warm.take(a) is None
    assert warm.take(b) is not None and warm.take(b) is None
    warm.keep(a, newer)
    assert warm.take(a) is newer


def test_what_is_kept_is_bounded_by_the_tokens_of_the_conversations() -> None:
    warm = WarmContexts(capacity=10, max_tokens=100)

    def of(tokens: int, version: int = 1) -> Warm:
        return Warm(version, 0, Ledger(), FoldedContext(tokens=[tokens // 2, tokens - tokens // 2]))

    a, b, c, huge = uuid4(), uuid4(), uuid4(), uuid4()
    warm.keep(a, of(40))
    warm.keep(b, of(40))
    warm.keep(huge, of(101))  # longer than everything allowed: never kept
    assert len(warm) == 2 and warm.tokens == 80
    warm.keep(c, of(30))  # over the bound: the least recent goes
    assert warm.take(a) is None and warm.tokens == 70
    warm.keep(b, of(50, version=2))  # the newer fold replaces the older one
    assert warm.tokens == 80 and len(warm) == 2
    taken = warm.take(b)
    assert taken is not None and taken.version == 2 and warm.tokens == 30


class Reads:
    """Counts the reads of a store's events (the recorder's `select_events`)."""

    def __init__(self, sessions: SessionService) -> None:
        self.count = 0
        recorder = sessions.recorder
        select = recorder.select_events

        def counted(*args: object, **kwargs: object) -> object:
            self.count += 1
            return select(*args, **kwargs)  # type: ignore[arg-type]

        recorder.select_events = counted  # type: ignore[method-assign]


async def handed_over(
    sessions: SessionService, bridge: SyncBridge, warm: WarmContexts, steps: int
) -> tuple[UUID, RunState]:
    """A session whose first run took `steps` steps, ended and handed its fold over."""
    sid, run_id = start(sessions)
    with sessions.hold(sid, run_id):
        first = await started(sessions, bridge, warm, sid, run_id)
        await run_steps(first, sessions, run_id, steps)
        await first.record(sessions.complete_run, sid, run_id)
        first.hand_over()
    return sid, first


async def test_a_runs_writes_read_nothing_the_run_has_not_already_read() -> None:
    """A run writes on the session as its own last write left it, caught up with the
    events its start read: the only read of the store is that start's."""
    sessions, bridge, warm = in_memory_sessions(), SyncBridge(2), WarmContexts()
    try:
        sid, _ = await handed_over(sessions, bridge, warm, 2)
        reads = Reads(sessions)
        for n in range(3):
            run_id = uuid4()
            sessions.submit_message(sid, f"and now {n}?", run_id)  # another writer's events
            with sessions.hold(sid, run_id):
                before = reads.count
                state = await started(sessions, bridge, warm, sid, run_id)
                assert reads.count == before + 1  # the tail: the message and its request
                await state.record(sessions.start_run, sid, run_id, "test-worker")
                await run_steps(state, sessions, run_id, 2)
                await state.record(sessions.complete_run, sid, run_id)
                assert reads.count == before + 1, "a write read the session again"
                state.hand_over()
        events = list(sessions.session_events(sid))
        assert [e.originator_version for e in events] == list(range(1, len(events) + 1))
        assert sessions.get_session(sid).version == len(events)
    finally:
        bridge.close()


async def test_a_write_after_another_writers_event_lands_after_it() -> None:
    """The session a run writes on may be behind the log (a rename, a stop through the
    API): its write is then judged again on the log, never lost nor refused for it."""
    sessions, bridge, warm = in_memory_sessions(), SyncBridge(2), WarmContexts()
    try:
        sid, run_id = start(sessions)
        with sessions.hold(sid, run_id):
            state = await started(sessions, bridge, warm, sid, run_id)
            await run_steps(state, sessions, run_id, 1)
            elsewhere = Context()  # another task's writes: no run held there
            elsewhere.run(sessions.rename_session, sid, "renamed while the run works")
            await run_steps(state, sessions, run_id, 1)
            elsewhere.run(sessions.stop_active_run, sid, "stopped by the user")
            with pytest.raises(ClaimLost):
                await state.record(sessions.complete_run, sid, run_id)
        kinds = [type(e) for e in sessions.session_events(sid)]
        renamed = kinds.index(S.SessionRenamed)
        assert kinds[renamed + 1 :].count(S.AssistantTurnRecorded) == 1
        assert kinds[-1] is S.RunStopped and S.RunCompleted not in kinds
    finally:
        bridge.close()


async def test_a_run_started_on_what_this_process_wrote_reads_nothing_at_its_start() -> None:
    """The message and run request the scheduler just wrote follow the last run's fold:
    the next run starts from them, and folds exactly what the log holds."""
    sessions, bridge, warm = in_memory_sessions(), SyncBridge(2), WarmContexts()
    try:
        sid, first = await handed_over(sessions, bridge, warm, 2)
        run_id = uuid4()
        warm.written(sid, sessions.submit_message(sid, "and now?", run_id).events)
        reads = Reads(sessions)
        with sessions.hold(sid, run_id):
            state = await started(sessions, bridge, warm, sid, run_id)
            assert reads.count == 0
            await state.record(sessions.start_run, sid, run_id, "test-worker")
            await run_steps(state, sessions, run_id, 1)
            assert reads.count == 0
        events = list(sessions.session_events(sid))
        assert state.version == len(events) and state.log == events[first.version :]
        assert state.context is not None
        assert state.context.request_and_estimate() == full_fold(events)
    finally:
        bridge.close()


async def test_events_another_writer_put_before_a_runs_write_are_folded_before_it() -> None:
    """Between the events a run knows of and its next write, someone else wrote (here a
    finding, which the context shows): the run reads them then, and folds them in order."""
    sessions, bridge, warm = in_memory_sessions(), SyncBridge(2), WarmContexts()
    try:
        sid, _ = await handed_over(sessions, bridge, warm, 1)
        run_id = uuid4()
        warm.written(sid, sessions.submit_message(sid, "and now?", run_id).events)
        elsewhere = Context()  # another task's writes: no run held there
        elsewhere.run(sessions.record_finding, sid, "Found before the run started.", [])
        with sessions.hold(sid, run_id):
            state = await started(sessions, bridge, warm, sid, run_id)
            await state.record(sessions.start_run, sid, run_id, "test-worker")
            await run_steps(state, sessions, run_id, 1)
            elsewhere.run(sessions.record_finding, sid, "Found while the run works.", [])
            await run_steps(state, sessions, run_id, 1)
        events = list(sessions.session_events(sid))
        assert [e.originator_version for e in state.log] == list(
            range(state.log[0].originator_version, len(events) + 1)
        )
        assert sum(isinstance(e, S.FindingRecorded) for e in state.log) == 2
        assert state.context is not None
        assert state.context.request_and_estimate() == full_fold(events)
        assert answers(state.ledger, run_id) == answers(Ledger.of(events), run_id)
    finally:
        bridge.close()
