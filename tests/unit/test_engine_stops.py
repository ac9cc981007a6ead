"""Runs on the in-memory store that end early or change hands: one at a time, stopped
mid-stream and mid-tool, recovered after a crash, and the next message or an approval
landing while the last run's task still winds down."""

from __future__ import annotations

import asyncio
from pathlib import Path
from uuid import UUID

import pytest

from domain.errors import Conflict, RunAlreadyActive
from tests.fakes.engine import make_engine, scripted
from tests.unit.test_engine import call


async def test_one_run_at_a_time(tmp_path: Path) -> None:
    engine = make_engine(scripted({"text": "slow", "delay": 5}), tmp_path)
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "first")
    with pytest.raises(RunAlreadyActive):
        await engine.scheduler.send_message(sid, "second")
    assert engine.kinds(sid).count("UserMessageAppended") == 1
    await engine.scheduler.stop(sid)


async def test_stop_cancels_a_slow_model_stream_and_records_the_stop(tmp_path: Path) -> None:
    llm = scripted({"text": "never finished", "delay": 30})
    engine = make_engine(llm, tmp_path)
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "think long")
    while not llm.requests:  # the model call is under way
        await asyncio.sleep(0)
    await engine.scheduler.stop(sid)
    assert not engine.scheduler.is_running(sid)
    assert engine.kinds(sid)[-1] == "RunStopped"
    assert "AssistantTurnRecorded" not in engine.kinds(sid)


async def test_stop_during_a_tool_marks_it_interrupted(tmp_path: Path) -> None:
    engine = make_engine(scripted({"tool_calls": [call("search", "t1", query="slow")]}), tmp_path)
    engine.search.delay = 30
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "go")
    while not engine.search.calls:
        await asyncio.sleep(0.01)
    await engine.scheduler.stop(sid)
    result = engine.events(sid, "ToolResultRecorded")[0]
    assert result.status == "interrupted"  # type: ignore[attr-defined]
    assert engine.kinds(sid)[-1] == "RunStopped"


async def test_a_run_that_fails_mid_tool_leaves_no_call_without_a_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = make_engine(scripted({"tool_calls": [call("search", "t1", query="a")]}), tmp_path)
    sid = await engine.new_session()

    def store_away(*args: object, **kwargs: object) -> None:
        raise OSError("the event store went away")  # something no run expects

    monkeypatch.setattr(engine.sessions, "record_result_and_effects", store_away)
    await engine.scheduler.send_message(sid, "go")
    assert await engine.scheduler.wait(sid) == "failed"
    assert engine.kinds(sid)[-2:] == ["ToolResultRecorded", "RunFailed"]
    result = engine.events(sid, "ToolResultRecorded")[0]
    assert (result.tool_use_id, result.status) == ("t1", "interrupted")  # type: ignore[attr-defined]
    assert "the event store went away" in result.summary  # type: ignore[attr-defined]


async def test_a_recovered_run_interrupts_what_was_in_flight_and_reruns_nothing(
    tmp_path: Path,
) -> None:
    llm = scripted({"tool_calls": [call("search", "t1", query="a")]}, {"text": "finished"})
    crashed = make_engine(llm, tmp_path)
    crashed.search.delay = 30
    sid = await crashed.new_session()
    await crashed.scheduler.send_message(sid, "go")
    while not crashed.search.calls:
        await asyncio.sleep(0.01)
    await crashed.scheduler.close()  # the process dies: nothing more is recorded
    assert crashed.kinds(sid)[-1] == "ToolCallRequested"

    restarted = make_engine(llm, tmp_path, sessions=crashed.sessions)
    run_id = crashed.sessions.get_session(sid).active_run
    assert run_id is not None
    restarted.scheduler.recover([(sid, run_id)])
    assert await restarted.scheduler.wait(sid) == "completed"
    assert restarted.events(sid, "ToolResultRecorded")[0].status == "interrupted"  # type: ignore[attr-defined]
    assert restarted.search.calls == []


class SlowToRelease:
    """Run locks (one process) whose release waits, as a round trip to Postgres does."""

    def __init__(self) -> None:
        self.held: set[UUID] = set()
        self.release = asyncio.Event()

    async def try_lock(self, session_id: UUID) -> bool:
        if session_id in self.held:
            return False
        self.held.add(session_id)
        return True

    async def unlock(self, session_id: UUID) -> None:
        await self.release.wait()
        self.held.discard(session_id)

    async def close(self) -> None:
        self.held.clear()


async def test_a_message_sent_while_the_last_run_is_still_winding_down_gets_its_run(
    tmp_path: Path,
) -> None:
    """The client sees `done` once `RunCompleted` is stored; the task that drove the run
    may still be releasing its lock then. The next message's run must neither be taken
    for the one already driven nor find the lock held and give up."""
    engine = make_engine(scripted({"text": "first"}, {"text": "second"}), tmp_path)
    locks = engine.scheduler.locks = SlowToRelease()
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "one")
    for _ in range(300):
        if engine.kinds(sid)[-1] == "RunCompleted":
            break
        await asyncio.sleep(0.01)
    assert engine.scheduler.is_running(sid), "the first run's task is still releasing its lock"
    await engine.scheduler.send_message(sid, "two")
    locks.release.set()
    assert await engine.scheduler.wait(sid) == "completed"
    assert engine.kinds(sid)[-3:] == ["RunStarted", "AssistantTurnRecorded", "RunCompleted"]
    assert engine.kinds(sid).count("RunCompleted") == 2, "the second message's run ran"


async def test_an_approval_given_while_the_suspended_run_is_winding_down_resumes_it(
    tmp_path: Path,
) -> None:
    """The same race for a run that suspends for an approval: the person answers while
    its task is still releasing the lock, and the run must go on all the same."""
    llm = scripted({"tool_calls": [call("delete_file", "t1", path="/tmp/x")]}, {"text": "Deleted."})
    engine = make_engine(llm, tmp_path)
    locks = engine.scheduler.locks = SlowToRelease()
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "delete /tmp/x")
    for _ in range(300):
        if engine.events(sid, "ConfirmationRequested"):
            break
        await asyncio.sleep(0.01)
    await asyncio.sleep(0.05)
    assert engine.scheduler.is_running(sid), "the suspended run's task is still releasing its lock"
    asked = engine.events(sid, "ConfirmationRequested")[0]
    await engine.scheduler.confirm(sid, asked.action_id, True, None, "alice")  # type: ignore[attr-defined]
    locks.release.set()
    assert await engine.scheduler.wait(sid) == "completed"
    assert engine.delete_file.deleted == ["/tmp/x"]
    assert engine.kinds(sid)[-1] == "RunCompleted"


async def test_a_stop_that_meets_a_write_of_the_run_s_stops_it_all_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user's stop and a write of the run's (a worker claiming it that moment) race:
    the stop that loses goes again as the log then says, and the run is stopped, not
    answered with a conflict."""
    llm = scripted({"text": "never finished", "delay": 30})
    engine = make_engine(llm, tmp_path)
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "think long")
    while not llm.requests:
        await asyncio.sleep(0)
    stop = engine.sessions.stop_active_run
    lost: list[UUID] = []

    def racing(session_id: UUID, reason: str) -> object:
        if not lost:  # another command wrote first, as a claim at that moment does
            lost.append(session_id)
            raise Conflict(f"session {session_id} was changed by another command")
        return stop(session_id, reason)

    monkeypatch.setattr(engine.sessions, "stop_active_run", racing)
    await engine.scheduler.stop(sid)
    assert lost == [sid] and engine.kinds(sid).count("RunStopped") == 1
    assert not engine.scheduler.is_running(sid)
