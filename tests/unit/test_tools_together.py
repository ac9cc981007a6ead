"""Tool calls of one turn run at once when none needs a human or writes to the log.

Three calls that can only finish together (a barrier of three) all succeed, and their
results are recorded in the turn's order even when the last one ends first; a turn
with a call that needs approval still goes one call at a time; replay is identical.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import msgspec

from application.tools.base import Tool, ToolContext
from tests.fakes.engine import DeleteFile, FlakySearch, make_engine, scripted, tools_with
from tests.unit.test_replay_and_fork import call, replay_of


class MeetArgs(msgspec.Struct, forbid_unknown_fields=True):
    who: str
    delay: float = 0.0


class Meet(Tool[MeetArgs]):
    """Finishes only once three calls are running together."""

    name = "meet"
    description = "wait for the others"
    Args = MeetArgs
    timeout = 5.0

    def __init__(self) -> None:
        self.barrier = asyncio.Barrier(3)
        self.finished: list[str] = []

    async def run(self, args: MeetArgs, context: ToolContext) -> str:
        await asyncio.wait_for(self.barrier.wait(), timeout=2.0)
        await asyncio.sleep(args.delay)
        self.finished.append(args.who)
        return f"{args.who} met the others"


async def test_a_turns_calls_run_together_and_are_recorded_in_turn_order(
    tmp_path: Path,
) -> None:
    meet = Meet()
    turns = scripted(
        {
            "tool_calls": [
                call("meet", "m1", who="a", delay=0.05),
                call("meet", "m2", who="b", delay=0.02),
                call("meet", "m3", who="c"),
            ]
        },
        {"text": "All three met."},
    )
    engine = make_engine(turns, tmp_path, extra_tools=[meet])
    sid = await engine.new_session(confirmation="risky")
    await engine.scheduler.send_message(sid, "meet")
    assert await engine.scheduler.wait(sid) == "completed"

    results = engine.events(sid, "ToolResultRecorded")
    assert [(r.tool_use_id, r.status) for r in results] == [  # type: ignore[attr-defined]
        ("m1", "success"),
        ("m2", "success"),
        ("m3", "success"),
    ]
    assert meet.finished == ["c", "b", "a"], "they ran at once: the shortest ended first"
    tools = tools_with(DeleteFile(), FlakySearch(), Meet())
    report = await replay_of(engine, sid, tools=tools)
    assert report.identical, report.divergence


async def test_a_turn_with_a_call_that_needs_approval_goes_one_call_at_a_time(
    tmp_path: Path,
) -> None:
    meet = Meet()
    turns = scripted(
        {
            "tool_calls": [
                call("meet", "m1", who="a"),
                call("meet", "m2", who="b"),
                call("meet", "m3", who="c"),
            ]
        },
        {"text": "Nobody met."},
    )
    engine = make_engine(turns, tmp_path, extra_tools=[meet])
    sid = await engine.new_session(confirmation="always")
    await engine.scheduler.send_message(sid, "meet")
    assert await engine.scheduler.wait(sid) == "suspended"
    assert len(engine.events(sid, "ToolCallRequested")) == 1  # asks before the first runs
