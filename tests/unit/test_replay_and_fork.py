"""Replay re-runs the engine on the recorded log; fork continues a session elsewhere."""

from __future__ import annotations

import asyncio
from pathlib import Path
from uuid import UUID

import pytest

from adapters.bootstrap import replay_engine
from adapters.llm.scripted import ScriptedLLM
from application.replay import ReplayReport, replay
from application.tools.base import AnyTool
from domain.conversation import ModelRequest
from tests.fakes.engine import DeleteFile, Engine, FlakySearch, make_engine, scripted, tools_with


def call(name: str, tool_id: str, **args: object) -> dict[str, object]:
    return {"name": name, "input": args, "id": tool_id}


async def replay_of(engine: Engine, sid: UUID, tools: list[AnyTool] | None = None) -> ReplayReport:
    """Replay on an engine like `engine`'s, with fresh tools (or `tools`)."""
    tools = tools if tools is not None else tools_with(DeleteFile(), FlakySearch())
    stored = list(engine.sessions.session_events(sid))
    return await replay(stored, engine=replay_engine(engine.runner, tools=tools))


async def long_session(engine: Engine) -> UUID:
    sid = await engine.new_session()
    for round_ in range(3):
        await engine.scheduler.send_message(sid, f"round {round_}")
        end = await engine.scheduler.wait(sid)
        while end == "suspended":
            asked = engine.events(sid, "ConfirmationRequested")[-1]
            await engine.scheduler.confirm(sid, asked.action_id, round_ != 1, "no", "alice")  # type: ignore[attr-defined]
            end = await engine.scheduler.wait(sid)
    return sid


def long_script() -> ScriptedLLM:
    turns: list[dict[str, object]] = []
    for r in range(3):
        plan = [{"title": f"step {r}", "status": "in_progress"}]
        searches = [call("search", f"s{r}{i}", query=f"q{i}") for i in range(4)]
        finding = call(
            "record_finding", f"f{r}", text=f"fact {r}", citations=[{"url": "https://e.org"}]
        )
        turns += [
            {"tool_calls": [call("update_plan", f"p{r}", items=plan)]},
            *[{"thinking": f"try {i}", "tool_calls": [s]} for i, s in enumerate(searches)],
            {"tool_calls": [call("delete_file", f"d{r}", path=f"/tmp/{r}")]},
            {"tool_calls": [finding]},
            {"text": f"done with round {r}"},
        ]  # fmt: skip
    return scripted(*turns)


async def test_replay_of_a_long_session_reproduces_every_event(tmp_path: Path) -> None:
    engine = make_engine(long_script(), tmp_path)
    engine.search.fail_with = "connection reset"  # failures and a strike are part of it
    sid = await long_session(engine)
    kinds = engine.kinds(sid)
    assert len(kinds) > 80 and "StrikeRecorded" in kinds and "ConfirmationGiven" in kinds
    report = await replay_of(engine, sid)
    assert report.identical, report.divergence
    assert report.events == len(kinds)


async def test_replay_reports_the_first_divergence(tmp_path: Path) -> None:
    engine = make_engine(long_script(), tmp_path)
    sid = await long_session(engine)
    without_search = tools_with(DeleteFile())  # the engine now behaves differently
    report = await replay_of(engine, sid, tools=without_search)
    assert report.divergence is not None
    assert "unknown tool 'search'" in report.divergence.got
    assert "ToolResultRecorded" in report.divergence.expected


async def test_replay_covers_a_stop_and_a_model_failure(tmp_path: Path) -> None:
    calls = iter(range(100))

    def model(request: ModelRequest) -> dict[str, object]:
        n = next(calls)
        if n == 0:
            return {"text": "slow", "delay": 30}
        if n == 1:
            from application.ports import LLMOverloaded

            raise LLMOverloaded("overloaded")
        return {"text": "fine"}

    llm = ScriptedLLM(model)
    engine = make_engine(llm, tmp_path)
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "one")
    while not llm.requests:  # the slow model call is under way
        await asyncio.sleep(0)
    await engine.scheduler.stop(sid)
    await engine.scheduler.send_message(sid, "two")
    assert await engine.scheduler.wait(sid) == "failed"
    await engine.scheduler.send_message(sid, "three")
    assert await engine.scheduler.wait(sid) == "completed"
    report = await replay_of(engine, sid)
    assert report.identical, report.divergence


async def test_replay_covers_a_run_that_failed_mid_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = make_engine(scripted({"tool_calls": [call("search", "t1", query="a")]}), tmp_path)
    sid = await engine.new_session()

    def store_away(*args: object, **kwargs: object) -> None:
        raise OSError("the event store went away")

    with monkeypatch.context() as patched:
        patched.setattr(engine.sessions, "record_result_and_effects", store_away)
        await engine.scheduler.send_message(sid, "go")
        assert await engine.scheduler.wait(sid) == "failed"
    assert engine.kinds(sid)[-2:] == ["ToolResultRecorded", "RunFailed"]
    report = await replay_of(engine, sid)
    assert report.identical, report.divergence


async def test_fork_at_a_version_then_continue_with_another_model(tmp_path: Path) -> None:
    first = make_engine(long_script(), tmp_path)
    sid = await long_session(first)
    at = next(e.originator_version for e in first.events(sid, "RunCompleted"))  # type: ignore[attr-defined]
    fork = await first.bridge(first.sessions.fork_session, sid, at)
    child = first.sessions.get_session(fork.session_id)
    assert (child.parent_id, child.parent_version) == (sid, at)
    parent_events = list(first.sessions.session_events(sid))[:at]
    child_events = list(first.sessions.session_events(fork.session_id))
    assert [type(e).__name__ for e in child_events] == [type(e).__name__ for e in parent_events]
    assert child_events[4].__dict__["content"] == parent_events[4].__dict__["content"]

    other = make_engine(
        scripted({"text": "a different model answers"}), tmp_path, sessions=first.sessions
    )
    await other.scheduler.send_message(fork.session_id, "continue differently")
    assert await other.scheduler.wait(fork.session_id) == "completed"
    assert (
        other.events(fork.session_id, "AssistantTurnRecorded")[-1].content[0]["text"]
        == "a different model answers"
    )  # type: ignore[attr-defined]
    assert len(list(first.sessions.session_events(sid))) > at  # the parent is untouched
    report = await replay_of(other, fork.session_id)
    assert report.identical, report.divergence


async def test_a_fork_mid_run_starts_idle(tmp_path: Path) -> None:
    engine = make_engine(scripted({"tool_calls": [call("delete_file", "d1", path="/x")]}), tmp_path)
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "go")
    assert await engine.scheduler.wait(sid) == "suspended"
    fork = await engine.bridge(
        engine.sessions.fork_session, sid, engine.sessions.get_session(sid).version
    )
    child = engine.sessions.get_session(fork.session_id)
    assert child.active_run is None and child.status == "stopped"
    assert engine.events(fork.session_id, "ToolResultRecorded")[-1].status == "interrupted"  # type: ignore[attr-defined]


async def test_replay_reproduces_calls_made_by_hand(tmp_path: Path) -> None:
    """`POST /mcp/tools/{name}/execute` records `manual_` calls: replay applies them as inputs."""
    engine = make_engine(scripted({"text": "hello"}, {"text": "again"}), tmp_path)
    manual = engine.scheduler.manual
    assert manual is not None
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "hi")
    await engine.scheduler.wait(sid)
    noted = await manual.execute(sid, "note_progress", {"text": "by hand"})
    assert noted.status == "success" and noted.tool_use_id.startswith("manual_")
    asked = await manual.execute(sid, "delete_file", {"path": "/tmp/x"})
    assert asked.status == "confirm_required" and asked.action_id is not None
    await engine.scheduler.confirm(sid, asked.action_id, True, None, "alice")
    refused = await manual.execute(sid, "delete_file", {"path": "/tmp/y"})
    assert refused.action_id is not None
    await engine.scheduler.confirm(sid, refused.action_id, False, "no", "alice")
    await engine.scheduler.send_message(sid, "more")
    await engine.scheduler.wait(sid)
    kinds = engine.kinds(sid)
    assert kinds.count("ToolCallRequested") == 3 and kinds[-1] == "RunCompleted"

    report = await replay_of(engine, sid)
    assert report.identical, report.divergence
    assert report.events == len(kinds)
