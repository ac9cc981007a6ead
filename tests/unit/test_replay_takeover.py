"""A run taken over by another worker (a second `RunStarted`, a claim) replays identically."""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

from domain.session import AgentSession as S
from tests.fakes.engine import make_engine, scripted
from tests.unit.test_replay_and_fork import call, replay_of


async def test_a_run_taken_over_mid_tool_by_another_worker_replays_identically(
    tmp_path: Path,
) -> None:
    engine = make_engine(
        scripted(
            {"tool_calls": [call("search", "s1", query="slow")]},
            {"text": "answered after the interruption"},
        ),
        tmp_path,
    )
    engine.search.delay = 30  # the first worker dies while the search runs
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "look it up")
    while not engine.search.calls:
        await asyncio.sleep(0.01)
    task = engine.scheduler._tasks[sid]  # noqa: SLF001 - the "worker" that dies
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    session = engine.sessions.get_session(sid)
    assert session.active_run is not None
    # Another worker claims the run and resumes it from the log.
    engine.sessions.start_run(sid, session.active_run, "worker-b")
    with engine.sessions.hold(sid, session.active_run, "worker-b"):
        end = await engine.runner.run(sid, session.active_run, recovering=True)
    assert end == "completed"
    starts = engine.events(sid, "RunStarted")
    assert [s.worker for s in starts][1:] == ["worker-b"]  # type: ignore[attr-defined]
    results = [
        e for e in engine.sessions.session_events(sid) if isinstance(e, S.ToolResultRecorded)
    ]
    assert [r.status for r in results] == ["interrupted"]

    report = await replay_of(engine, sid)
    assert report.divergence is None, report.divergence
