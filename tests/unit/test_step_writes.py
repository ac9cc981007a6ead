"""A step of the loop is one write: a turn with the calls it requests, a result with
what comes with it (notes, strike, approval asked), each saved together."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eventsourcing.persistence import StoredEvent

from tests.fakes.engine import Engine, make_engine, scripted


def call(name: str, tool_id: str, **args: object) -> dict[str, object]:
    return {"name": name, "input": args, "id": tool_id}


def saves_of(engine: Engine) -> list[list[str]]:
    """Watch every insert into the session's store, from a thread or from the loop
    (`LoopWrites`): the kinds of the events each wrote."""
    saves: list[list[str]] = []

    def kinds(stored: Sequence[StoredEvent]) -> None:
        saves.append([e.topic.rpartition(".")[2] for e in stored])

    recorder = engine.sessions.recorder
    insert = recorder.insert_events

    def watched(stored: Sequence[StoredEvent], **kwargs: Any) -> Sequence[int] | None:
        kinds(stored)
        return insert(stored, **kwargs)

    recorder.insert_events = watched  # type: ignore[method-assign]
    return saves


async def test_a_turn_and_its_call_then_the_result_and_its_note_are_two_writes(
    tmp_path: Path,
) -> None:
    plan = [{"title": "Search", "status": "in_progress"}]
    llm = scripted(
        {"tool_calls": [call("update_plan", "t1", items=plan)]},
        {"text": "Done."},
    )
    engine = make_engine(llm, tmp_path)
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "plan it")
    saves = saves_of(engine)
    assert await engine.scheduler.wait(sid) == "completed"
    assert ["AssistantTurnRecorded", "ToolCallRequested"] in saves
    assert ["PlanUpdated", "ToolResultRecorded"] in saves
    assert engine.kinds(sid)[4:] == [
        "AssistantTurnRecorded", "ToolCallRequested", "PlanUpdated", "ToolResultRecorded",
        "AssistantTurnRecorded", "RunCompleted",
    ]  # fmt: skip


async def test_calls_run_together_are_requested_in_the_turns_write(tmp_path: Path) -> None:
    llm = scripted(
        {"tool_calls": [call("search", "t1", query="a"), call("search", "t2", query="b")]},
        {"text": "Done."},
    )
    engine = make_engine(llm, tmp_path)
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "search twice")
    saves = saves_of(engine)
    assert await engine.scheduler.wait(sid) == "completed"
    turn = ["AssistantTurnRecorded", "ToolCallRequested", "ToolCallRequested"]
    assert turn in saves
    assert saves.count(["ToolResultRecorded"]) == 2


async def test_the_failure_that_completes_a_strike_is_one_write(tmp_path: Path) -> None:
    failing: list[dict[str, object]] = [
        {"tool_calls": [call("search", f"t{i}", query=f"try {i}")]} for i in range(3)
    ]
    llm = scripted(*failing, {"text": "Changing approach."})
    engine = make_engine(llm, tmp_path)
    engine.search.fail_with = "HTTP 503 from upstream after 1234 ms"
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "search")
    saves = saves_of(engine)
    assert await engine.scheduler.wait(sid) == "completed"
    assert saves.count(["ToolResultRecorded"]) == 2
    assert ["ToolResultRecorded", "StrikeRecorded"] in saves


async def test_a_risky_call_asks_for_approval_in_the_turns_write(tmp_path: Path) -> None:
    llm = scripted({"tool_calls": [call("delete_file", "t1", path="/tmp/x")]}, {"text": "Ok."})
    engine = make_engine(llm, tmp_path)
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "delete it")
    saves = saves_of(engine)
    assert await engine.scheduler.wait(sid) == "suspended"
    assert saves[-1] == ["AssistantTurnRecorded", "ToolCallRequested", "ConfirmationRequested"]
