"""A run's writer is fenced: once the run ends or another worker claims it, it writes nothing."""

from __future__ import annotations

import asyncio
from uuid import UUID, uuid4

import pytest

from adapters.bootstrap.in_memory import in_memory_sessions
from application.bridge import SyncBridge
from application.sessions import SessionService
from domain.errors import ClaimLost


def _session_with_run() -> tuple[SessionService, UUID, UUID]:
    sessions = in_memory_sessions()
    sid = sessions.start_session(workspace_id=uuid4(), owner_id=uuid4(), title="t").session_id
    run_id = uuid4()
    sessions.submit_message(sid, "hello", run_id)
    return sessions, sid, run_id


def _claim_elsewhere(sessions: SessionService, sid: UUID, run_id: UUID, worker: str) -> None:
    """Another process's claim: the session saved past this process's `_change`."""
    session = sessions.get_session(sid)
    session.start_run(run_id, worker)
    sessions.save(session)


def test_a_claimed_run_refuses_its_former_holders_writes() -> None:
    sessions, sid, run_id = _session_with_run()
    with sessions.hold(sid, run_id, "worker-a"):
        sessions.start_run(sid, run_id, "worker-a")
        sessions.note_progress(sid, "step one")
        _claim_elsewhere(sessions, sid, run_id, "worker-b")
        before = sessions.get_session(sid).version
        with pytest.raises(ClaimLost, match="claimed by worker-b"):
            sessions.note_progress(sid, "step two, by a stalled worker")
    assert sessions.get_session(sid).version == before  # nothing written
    sessions.note_progress(sid, "worker-b goes on")  # outside the hold: the new holder


def test_a_hold_learns_its_worker_at_its_first_write() -> None:
    sessions, sid, run_id = _session_with_run()
    with sessions.hold(sid, run_id):  # a run started in this process: who holds it is learnt
        sessions.start_run(sid, run_id, "here")
        _claim_elsewhere(sessions, sid, run_id, "there")
        with pytest.raises(ClaimLost):
            sessions.note_progress(sid, "too late")


def test_an_ended_run_refuses_its_drivers_writes() -> None:
    sessions, sid, run_id = _session_with_run()
    with sessions.hold(sid, run_id, "worker-a"):
        sessions.start_run(sid, run_id, "worker-a")
        sessions.stop_active_run(sid, "stopped by the user")  # the API, in this process
        with pytest.raises(ClaimLost, match="no longer active"):
            sessions.note_progress(sid, "after the stop")


def test_a_hold_ends_with_its_block() -> None:
    sessions, sid, run_id = _session_with_run()
    with sessions.hold(sid, run_id, "worker-a"):
        sessions.start_run(sid, run_id, "worker-a")
    _claim_elsewhere(sessions, sid, run_id, "worker-b")
    sessions.note_progress(sid, "no hold here any more")
    assert sessions.get_session(sid).run_worker == "worker-b"


async def test_a_hold_fences_its_runs_writes_not_other_commands_in_the_process() -> None:
    """What a hold fences is the writes of the task that drives the run. A user's command
    that this process handles while that task winds down (its run just ended) is no
    write of the run: the aggregate alone judges it, as on any other process."""
    sessions, sid, run_id = _session_with_run()
    bridge = SyncBridge(2)
    ended, wound_down = asyncio.Event(), asyncio.Event()

    async def drive() -> None:
        with sessions.hold(sid, run_id, "here"):
            await bridge(sessions.start_run, sid, run_id, "here")
            await bridge(sessions.complete_run, sid, run_id)
            ended.set()
            await wound_down.wait()  # a snapshot being kept, the run lock being released
            with pytest.raises(ClaimLost):
                await bridge(sessions.note_progress, sid, "the run's own late write")

    task = asyncio.create_task(drive())
    try:
        await ended.wait()
        await bridge(sessions.rename_session, sid, "renamed meanwhile")
        await bridge(sessions.submit_message, sid, "the next message", uuid4())
        wound_down.set()
        await task
    finally:
        bridge.close()
    assert sessions.get_session(sid).title == "renamed meanwhile"
