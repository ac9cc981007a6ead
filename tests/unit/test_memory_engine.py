"""Long-term memory in runs, on the engine alone: `remember` in one session and recall
in the next one of the same owner (as a block in the log at the run's start, never in
the system prompt), nothing for another owner, automatic memory from a user's "remember
that ..." and from findings with sources, kept failures for bad input, and replays that
reproduce runs that recalled."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any
from uuid import uuid4

from application.bridge import SyncBridge
from application.memories import Memories, Remembered
from domain.memory_values import Namespace
from domain.session import AgentSession as S
from tests.fakes.engine import Engine, in_memory_memories, make_engine, scripted
from tests.unit.test_replay_and_fork import call, replay_of


def engine_for(tmp_path: Path, *turns: dict[str, object], like: Engine | None = None) -> Engine:
    """An engine playing `turns` in each session; `like`: sharing that one's memory."""
    memories = like.memories if like is not None else None
    return make_engine(scripted(*turns), tmp_path, memories=memories)


async def chat(engine: Engine, sid: object, text: str) -> str:
    await engine.scheduler.send_message(sid, text)  # type: ignore[arg-type]
    return await engine.scheduler.wait(sid)  # type: ignore[arg-type]


async def test_remembered_in_one_session_is_recalled_at_the_start_of_the_next(
    tmp_path: Path,
) -> None:
    remember = call("remember", "r1", text="The user wants answers as tables",
                    category="preference")  # fmt: skip
    writer = engine_for(tmp_path, {"tool_calls": [remember]}, {"text": "Noted."})
    owner = uuid4()
    first = await writer.new_session(owner_id=owner)
    assert await chat(writer, first, "Please keep answers short") == "completed"
    (result,) = writer.events(first, "ToolResultRecorded")
    assert result.status == "success" and "remembered" in result.summary  # type: ignore[attr-defined]

    engine = engine_for(tmp_path, {"text": "Here is a table."}, like=writer)
    second = await engine.new_session(owner_id=owner)
    assert await chat(engine, second, "Give me the answers as tables please") == "completed"
    (recalled,) = engine.events(second, "MemoriesRecalled")
    assert isinstance(recalled, S.MemoriesRecalled)
    assert [m.text for m in recalled.memories] == ["The user wants answers as tables"]
    assert recalled.memories[0].source_session_id == first
    kinds = engine.kinds(second)
    # After the run started and before the model's turn: the block joins the conversation.
    assert kinds.index("MemoriesRecalled") == kinds.index("RunStarted") + 1
    assert kinds.index("MemoriesRecalled") < kinds.index("AssistantTurnRecorded")

    stranger = await engine.new_session()
    assert await chat(engine, stranger, "Give me the answers as tables please") == "completed"
    assert engine.events(stranger, "MemoriesRecalled") == []


async def test_the_recalled_block_is_in_the_conversation_not_the_system_prompt(
    tmp_path: Path,
) -> None:
    engine = engine_for(tmp_path, {"text": "ok"})
    owner = uuid4()
    await engine.memories.remember(
        Namespace("user", owner), "Reports go to finance@example.org", "knowledge",
        _user(owner), organization_id=None,
    )  # fmt: skip
    sid = await engine.new_session(owner_id=owner)
    await chat(engine, sid, "Where do reports go?")
    request = engine.runner.llm.requests[-1]  # type: ignore[attr-defined]
    assert "finance@example.org" not in str(request.system)
    texts = [str(b) for m in request.messages for b in m.content]
    assert any("finance@example.org" in t and "Long-term memory" in t for t in texts)


async def test_a_replay_reproduces_a_run_that_recalled(tmp_path: Path) -> None:
    remember = call("remember", "r1", text="Budget is 40k EUR", category="knowledge",
                    namespace="workspace")  # fmt: skip
    writer = engine_for(tmp_path, {"tool_calls": [remember]}, {"text": "Kept."})
    owner, workspace = uuid4(), uuid4()
    first = await writer.new_session(workspace, owner_id=owner)
    await chat(writer, first, "Note the budget")
    recall = call("recall", "q1", query="budget EUR")
    reader = engine_for(tmp_path, {"tool_calls": [recall]}, {"text": "40k EUR."}, like=writer)
    second = await reader.new_session(workspace, owner_id=owner)
    await chat(reader, second, "What is the budget in EUR?")
    assert reader.events(second, "MemoriesRecalled")
    (result,) = reader.events(second, "ToolResultRecorded")
    assert "Budget is 40k EUR" in result.summary  # type: ignore[attr-defined]
    for engine, sid in ((writer, first), (reader, second)):
        report = await replay_of(engine, sid)
        assert report.identical, report.divergence


async def test_remember_that_becomes_a_preference_and_findings_become_workspace_knowledge(
    tmp_path: Path,
) -> None:
    finding = call("record_finding", "f1", text="Heat pumps cut bills by 30%",
                   citations=[{"url": "https://example.org/heat", "title": "Heat"}])  # fmt: skip
    unsourced = call("record_finding", "f2", text="Maybe solar too")
    engine = engine_for(tmp_path, {"tool_calls": [finding, unsourced]}, {"text": "Done."})
    owner, workspace = uuid4(), uuid4()
    sid = await engine.new_session(workspace, owner_id=owner)
    await chat(engine, sid, "Remember that I live in Lyon")
    assert engine.runner.memory is not None
    await engine.runner.memory.settled()
    (preference,) = await engine.memories.list(Namespace("user", owner))
    assert (preference.text, preference.category) == ("I live in Lyon", "preference")
    message = engine.events(sid, "UserMessageAppended")[0]
    assert (preference.source.session_id, preference.source.version) == (
        sid, message.originator_version,  # type: ignore[attr-defined]
    )  # fmt: skip
    (knowledge,) = await engine.memories.list(Namespace("workspace", workspace))
    assert (knowledge.text, knowledge.category) == ("Heat pumps cut bills by 30%", "knowledge")
    recorded = engine.events(sid, "FindingRecorded")[0]
    assert knowledge.source.version == recorded.originator_version  # type: ignore[attr-defined]


async def test_bad_memory_calls_are_kept_failures_and_write_nothing(tmp_path: Path) -> None:
    engine = engine_for(
        tmp_path,
        {"tool_calls": [
            call("remember", "b1", text="", category="preference"),
            call("remember", "b2", text="fine", category="opinion"),
            call("remember", "b3", text="fine", category="knowledge", namespace="team"),
            call("recall", "b4", query="x", k=500),
        ]},
        {"text": "Sorry."},
    )  # fmt: skip
    owner = uuid4()
    sid = await engine.new_session(owner_id=owner)
    await chat(engine, sid, "Try to remember")
    results = engine.events(sid, "ToolResultRecorded")
    assert [r.status for r in results] == ["error"] * 4  # type: ignore[attr-defined]
    assert "team" in results[2].error  # type: ignore[attr-defined]  # the session has no team
    assert await engine.memories.list(Namespace("user", owner)) == []


def _user(user_id: object) -> object:
    from domain.authors import ByUser

    return ByUser(user_id)  # type: ignore[arg-type]


class HeldMemories(Memories):
    """Memories whose every write waits until `release` is set (a slow embedder, say)."""

    def __init__(self, like: Memories) -> None:
        super().__init__(like.store, like.index, like.bridge)
        self.release = asyncio.Event()

    async def remember(self, *args: Any, **kwargs: Any) -> Remembered:  # noqa: ANN401
        await self.release.wait()
        return await super().remember(*args, **kwargs)


async def test_a_remember_that_is_kept_without_holding_up_the_run(tmp_path: Path) -> None:
    held = HeldMemories(in_memory_memories(SyncBridge(2)))
    engine = make_engine(scripted({"text": "Noted."}), tmp_path, memories=held)
    owner = uuid4()
    sid = await engine.new_session(owner_id=owner)
    await engine.scheduler.send_message(sid, "Remember that I live in Lyon")
    assert await asyncio.wait_for(engine.scheduler.wait(sid), 10) == "completed"
    assert await engine.memories.list(Namespace("user", owner)) == []  # still being kept
    held.release.set()
    assert engine.runner.memory is not None
    await engine.runner.memory.settled()
    (kept,) = await engine.memories.list(Namespace("user", owner))
    assert kept.text == "I live in Lyon"
