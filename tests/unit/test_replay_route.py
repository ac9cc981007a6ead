"""The replay route's work (adapters/http/routes/replay.py): the replay on its own loop in a
worker thread, and its report as the wire's `ReplayOut`."""

from __future__ import annotations

import asyncio
from pathlib import Path

from adapters.bootstrap import replay_engine
from adapters.http.routes.replay import replay_out, run_replay
from tests.fakes.engine import DeleteFile, FlakySearch, make_engine, tools_with
from tests.unit.test_replay_and_fork import long_script, long_session


async def test_a_finished_session_replays_identically_off_the_loop(tmp_path: Path) -> None:
    engine = make_engine(long_script(), tmp_path)
    sid = await long_session(engine)
    stored = list(engine.sessions.session_events(sid))
    like = replay_engine(engine.runner, tools=tools_with(DeleteFile(), FlakySearch()))
    out = replay_out(await asyncio.to_thread(run_replay, stored, like))
    assert out.identical and out.divergence is None
    assert out.events == len(stored) > 80


async def test_an_engine_that_behaves_otherwise_reports_the_first_divergence(
    tmp_path: Path,
) -> None:
    engine = make_engine(long_script(), tmp_path)
    sid = await long_session(engine)
    stored = list(engine.sessions.session_events(sid))
    without_search = replay_engine(engine.runner, tools=tools_with(DeleteFile()))
    out = replay_out(await asyncio.to_thread(run_replay, stored, without_search))
    assert not out.identical and out.divergence is not None
    assert "ToolResultRecorded" in out.divergence.expected
    assert "unknown tool 'search'" in out.divergence.got
    assert 1 < out.divergence.version <= out.events
