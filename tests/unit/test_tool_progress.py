"""A running tool call is seen live (`tool_call running`, then how long it runs), and
nothing of that is stored: the log, and so replay, never see it."""

from __future__ import annotations

from pathlib import Path

from adapters.http.streams.sse import live_payload
from adapters.nats.live import from_wire, to_wire
from domain.conversation import LiveItem, TextDelta, ThinkingDelta, ToolProgress, ToolRunning
from schemas import live, sse
from tests.fakes.engine import make_engine, scripted
from tests.unit.test_replay_and_fork import call, replay_of


async def test_a_slow_tool_is_seen_running_and_its_progress_is_never_stored(
    tmp_path: Path,
) -> None:
    llm = scripted(
        {"tool_calls": [call("search", "s1", query="heat pumps")]},
        {"text": "Found it."},
    )
    engine = make_engine(llm, tmp_path)
    engine.search.delay = 0.45
    engine.runner.tool_calls.progress_every = 0.1
    sid = await engine.new_session(confirmation="never")
    before = len(engine.kinds(sid))
    await engine.scheduler.send_message(sid, "look it up")
    assert await engine.scheduler.wait(sid) == "completed"

    tool_items = [d for d in engine.deltas.deltas[sid] if isinstance(d, ToolRunning | ToolProgress)]
    assert tool_items[0] == ToolRunning("s1", "search")
    said = [d for d in tool_items[1:] if isinstance(d, ToolProgress)]
    assert len(said) >= 2 and all(d.tool_use_id == "s1" for d in said)
    assert said[0].message == "search: running for 0.1 s"
    # The log has what it had without them: no progress of the tool's was stored.
    kinds = engine.kinds(sid)[before:]
    assert "ProgressNoted" not in kinds
    assert kinds.count("ToolResultRecorded") == 1
    report = await replay_of(engine, sid)
    assert report.identical, report.divergence


def test_live_items_cross_nats_and_reach_sse_without_an_id() -> None:
    items: list[LiveItem] = [
        TextDelta("Hel"), ThinkingDelta("hmm"), ToolRunning("t1", "code_execute"),
        ToolProgress("t1", "code_execute: running for 5 s"),
    ]  # fmt: skip
    for item in items:
        assert from_wire(live.decode(live.encode(to_wire(item)))) == item
    running = live_payload(ToolRunning("t1", "code_execute"))
    assert running == sse.ToolCall(id="t1", name="code_execute", status="running")
    progress = live_payload(ToolProgress("t1", "code_execute: running for 5 s"))
    assert progress == sse.Progress(text="code_execute: running for 5 s", tool_call_id="t1")
    for payload in (running, progress):
        assert sse.sse_id(payload) is None
        assert sse.decode(sse.encode(payload)) == payload
