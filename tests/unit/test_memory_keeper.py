"""The memory keeper: what a session taught (a user's "remember that ...", a finding with
sources) is kept from the log even when the run that taught it never kept it (its
process died first), exactly once however often the log is read again, never bringing
back a memory a user forgot, and never skipping an event it failed to keep."""

from __future__ import annotations

import asyncio
from pathlib import Path
from uuid import UUID, uuid4

import pytest
from eventsourcing.popo import POPOTrackingRecorder

from application.auto_memory import AutoMemory, MemoryKeeper
from application.memories import Memories, Remembered
from domain.authors import ByUser
from domain.memory_values import Memory, Namespace
from tests.fakes.engine import Engine, make_engine, scripted
from tests.unit.test_replay_and_fork import call

FINDING = call("record_finding", "f1", text="Heat pumps cut bills by 30%",
               citations=[{"url": "https://example.org/heat", "title": "Heat"}])  # fmt: skip
UNSOURCED = call("record_finding", "f2", text="Maybe solar too")


class FlakyMemories(Memories):
    """Memories whose store is away for the first `outages` writes."""

    outages = 0

    async def remember(self, *args: object, **kwargs: object) -> Remembered:
        if self.outages:
            self.outages -= 1
            raise ConnectionError("the memory store is away")
        return await super().remember(*args, **kwargs)  # type: ignore[arg-type]


async def taught_but_not_kept(
    tmp_path: Path, *later: dict[str, object]
) -> tuple[Engine, UUID, UUID, UUID]:
    """A session that taught two memories, run by a process that kept neither (as one
    that died before its background keeping would leave it); `later`: the script's turns
    for the session's next runs."""
    turns = ({"tool_calls": [FINDING, UNSOURCED]}, {"text": "Done."}, *later)
    engine = make_engine(scripted(*turns), tmp_path)
    assert engine.runner.memory is not None
    engine.runner.memory.auto = None
    owner, workspace = uuid4(), uuid4()
    sid = await engine.new_session(workspace, owner_id=owner)
    await engine.scheduler.send_message(sid, "Remember that I live in Lyon")
    assert await engine.scheduler.wait(sid) == "completed"
    assert await kept(engine, owner, workspace) == ([], [])
    return engine, sid, owner, workspace


async def kept(engine: Engine, owner: UUID, workspace: UUID) -> tuple[list[Memory], list[Memory]]:
    user = await engine.memories.list(Namespace("user", owner))
    return user, await engine.memories.list(Namespace("workspace", workspace))


def keeper_of(engine: Engine, memories: Memories | None = None) -> MemoryKeeper:
    """A keeper with a checkpoint of its own: a new one reads the whole log again."""
    auto = AutoMemory(memories or engine.memories)
    return MemoryKeeper(engine.sessions, POPOTrackingRecorder(), auto, engine.bridge)


async def test_the_keeper_keeps_what_a_run_taught_and_did_not_keep(tmp_path: Path) -> None:
    engine, sid, owner, workspace = await taught_but_not_kept(tmp_path)
    keeper = keeper_of(engine)
    assert await keeper.catch_up() == 3  # the message and the two findings
    (preference,), (knowledge,) = await kept(engine, owner, workspace)
    assert (preference.text, preference.category) == ("I live in Lyon", "preference")
    assert (knowledge.text, knowledge.category) == ("Heat pumps cut bills by 30%", "knowledge")
    (message,) = engine.events(sid, "UserMessageAppended")
    (finding, _) = engine.events(sid, "FindingRecorded")
    assert (preference.source.session_id, preference.source.version) == (
        sid, message.originator_version,  # type: ignore[attr-defined]
    )  # fmt: skip
    assert knowledge.source.version == finding.originator_version  # type: ignore[attr-defined]
    assert await keeper.catch_up() == 0  # its checkpoint moved past them


async def test_reading_the_log_again_keeps_nothing_twice_nor_brings_back_the_forgotten(
    tmp_path: Path,
) -> None:
    engine, _, owner, workspace = await taught_but_not_kept(tmp_path)
    await keeper_of(engine).catch_up()
    (preference,), (knowledge,) = await kept(engine, owner, workspace)
    await engine.memories.forget(Namespace("user", owner), preference.memory_id, ByUser(owner))
    assert await keeper_of(engine).catch_up() == 3  # a checkpoint lost: all read again
    assert await kept(engine, owner, workspace) == ([], [knowledge])


async def test_what_the_run_kept_itself_is_not_kept_again(tmp_path: Path) -> None:
    again = call("record_finding", "f3", text="Heat pumps cut bills by 30%",
                 citations=[{"url": "https://example.org/pumps", "title": "Pumps"}])  # fmt: skip
    engine, sid, owner, workspace = await taught_but_not_kept(
        tmp_path, {"tool_calls": [again]}, {"text": "Again."}
    )
    engine.runner.memory.auto = AutoMemory(engine.memories)  # type: ignore[union-attr]
    await engine.scheduler.send_message(sid, "Remember that I cycle to work")
    assert await engine.scheduler.wait(sid) == "completed"
    await engine.runner.memory.settled()  # type: ignore[union-attr]
    (cycling,), _ = await kept(engine, owner, workspace)
    await engine.memories.update(Namespace("user", owner), cycling.memory_id, ByUser(owner),
                                 text="I cycle to work on Mondays")  # fmt: skip
    await keeper_of(engine).catch_up()
    user, workspace_memories = await kept(engine, owner, workspace)
    # The user's edit stands: the keeper did not learn from that message again.
    assert sorted(m.text for m in user) == ["I cycle to work on Mondays", "I live in Lyon"]
    # The second run found the same thing again: the run kept it, and the keeper found
    # it kept (the first finding's source, then the second's, noted on one memory).
    (knowledge,) = workspace_memories
    assert (knowledge.text, knowledge.revision) == ("Heat pumps cut bills by 30%", 1)


async def test_an_event_that_could_not_be_kept_is_kept_by_the_next_pass(tmp_path: Path) -> None:
    engine, _, owner, workspace = await taught_but_not_kept(tmp_path)
    flaky = FlakyMemories(engine.memories.store, engine.memories.index, engine.bridge)
    flaky.outages = 1
    keeper = keeper_of(engine, flaky)
    with pytest.raises(ConnectionError):
        await keeper.catch_up()
    assert await kept(engine, owner, workspace) == ([], [])
    await keeper.catch_up()
    user, workspace_memories = await kept(engine, owner, workspace)
    assert len(user) == len(workspace_memories) == 1


async def test_a_running_keeper_says_why_a_pass_stopped_until_one_succeeds(
    tmp_path: Path,
) -> None:
    engine, _, owner, workspace = await taught_but_not_kept(tmp_path)
    flaky = FlakyMemories(engine.memories.store, engine.memories.index, engine.bridge)
    flaky.outages = 3
    keeper = keeper_of(engine, flaky)
    keeper.interval = 0.01
    running = asyncio.create_task(keeper.run())
    try:
        for _ in range(500):
            if keeper.error is not None:
                break
            await asyncio.sleep(0.01)
        assert keeper.error == "ConnectionError: the memory store is away"
        for _ in range(500):
            if keeper.error is None:
                break
            await asyncio.sleep(0.01)
        assert keeper.error is None
        user, workspace_memories = await kept(engine, owner, workspace)
        assert len(user) == len(workspace_memories) == 1
    finally:
        running.cancel()
