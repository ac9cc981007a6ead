"""A run's write from the loop (`LoopWrites.change_on_loop`) stores what the thread path
stores, and goes through the thread whenever it would need I/O or loses its version:
the outcome is the thread path's in every case."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import pytest
from eventsourcing.persistence import StoredEvent

from adapters.bootstrap.in_memory import InMemoryLoopRecorder, in_memory_sessions
from application.bridge import SyncBridge
from application.loop_writes import StoreBusy
from application.sessions import SessionService
from domain.errors import DomainError
from domain.values import PlanItem
from tests.fakes.bridge import CountingBridge
from tests.fakes.engine import make_engine, scripted
from tests.fakes.store_reads import reads_of


@pytest.fixture
def bridge() -> Iterator[SyncBridge]:
    b = SyncBridge(2)
    yield b
    b.close()


class Watched(InMemoryLoopRecorder):
    """Counts the inserts that reach the store from the loop; `busy` refuses them."""

    def __init__(self, sessions: SessionService, *, busy: bool = False) -> None:
        super().__init__(sessions.recorder)
        self.busy = busy
        self.inserts = 0

    async def insert_events(self, stored_events: Sequence[StoredEvent]) -> list[int]:
        if self.busy:
            raise StoreBusy("no connection free")
        self.inserts += 1
        return await super().insert_events(stored_events)

    async def select_events(self, originator_id: UUID, **bounds: Any) -> list[StoredEvent]:
        if self.busy:
            raise StoreBusy("no connection free")
        return await super().select_events(originator_id, **bounds)


def started(sessions: SessionService) -> tuple[UUID, UUID]:
    """A session with a run started in it, and the run's id."""
    sid = sessions.start_session(workspace_id=uuid4(), owner_id=uuid4(), title="t").session_id
    run_id = uuid4()
    sessions.submit_message(sid, "hello", run_id)
    return sid, run_id


def plan(title: str) -> list[PlanItem]:
    return [PlanItem(title=title, status="in_progress")]


def stored(sessions: SessionService, sid: UUID) -> list[tuple[int, str, bytes]]:
    return [(e.originator_version, e.topic, e.state) for e in sessions.recorder.select_events(sid)]


async def test_a_run_s_write_from_the_loop_stores_what_the_thread_stores(
    bridge: SyncBridge,
) -> None:
    sessions = in_memory_sessions()
    loop = Watched(sessions)
    sessions.loop_recorder = loop
    sid, run_id = started(sessions)
    with sessions.hold(sid, run_id):
        first = await sessions.change_on_loop(bridge, sessions.start_run, sid, run_id, "w")
        second = await sessions.change_on_loop(bridge, sessions.update_plan, sid, plan("a"))
    assert loop.inserts == 1, "the first write read the log (thread); the second was lent"
    assert second.version == first.version + 1
    assert [type(e).__name__ for e in second.events] == ["PlanUpdated"]
    assert second.notification_id == sessions.recorder.max_notification_id()
    # The same commands on the thread path store the same rows.
    other = in_memory_sessions()
    other.loop_recorder = None
    osid, orun = started(other)
    with other.hold(osid, orun):
        await other.change_on_loop(bridge, other.start_run, osid, orun, "w")
        await other.change_on_loop(bridge, other.update_plan, osid, plan("a"))
    mine, theirs = stored(sessions, sid), stored(other, osid)
    assert [(v, t) for v, t, _ in mine] == [(v, t) for v, t, _ in theirs]
    assert len(mine) == len(theirs) == 5


async def test_a_version_another_writer_took_is_judged_again_on_the_log(
    bridge: SyncBridge,
) -> None:
    sessions = in_memory_sessions()
    loop = Watched(sessions)
    sessions.loop_recorder = loop
    sid, run_id = started(sessions)
    with sessions.hold(sid, run_id):
        await sessions.change_on_loop(bridge, sessions.start_run, sid, run_id, "w")
        sessions.rename_session(sid, "renamed meanwhile")  # another command, same version
        receipt = await sessions.change_on_loop(bridge, sessions.update_plan, sid, plan("b"))
    assert loop.inserts == 1, "the lent write lost its version and went to the thread"
    session = sessions.get_session(sid)
    assert session.title == "renamed meanwhile" and receipt.version == session.version
    assert [type(e).__name__ for e in receipt.events] == ["PlanUpdated"]


async def test_a_refused_command_is_refused_as_on_the_thread(bridge: SyncBridge) -> None:
    sessions = in_memory_sessions()
    sessions.loop_recorder = Watched(sessions)
    sid, run_id = started(sessions)
    with sessions.hold(sid, run_id):
        await sessions.change_on_loop(bridge, sessions.start_run, sid, run_id, "w")
        with pytest.raises(DomainError, match="title must be 1 to 500 characters"):
            await sessions.change_on_loop(bridge, sessions.rename_session, sid, "")
        # and the write after it starts from the log, not from the refused copy
        receipt = await sessions.change_on_loop(bridge, sessions.update_plan, sid, plan("d"))
    assert sessions.get_session(sid).version == receipt.version == 5


async def test_a_busy_pool_sends_the_write_through_the_thread(bridge: SyncBridge) -> None:
    sessions = in_memory_sessions()
    sessions.loop_recorder = Watched(sessions, busy=True)
    sid, run_id = started(sessions)
    with sessions.hold(sid, run_id):
        await sessions.change_on_loop(bridge, sessions.start_run, sid, run_id, "w")
        receipt = await sessions.change_on_loop(bridge, sessions.update_plan, sid, plan("c"))
    assert receipt.version == sessions.get_session(sid).version == 5


async def test_a_key_not_in_memory_is_loaded_on_the_thread(bridge: SyncBridge) -> None:
    """A user message's text is sealed with its author's key: one not held means a read
    (or a key made), which never happens on the loop."""
    sessions = in_memory_sessions()
    loop = Watched(sessions)
    sessions.loop_recorder = loop
    keys = Keys()
    sessions.seal_with(keys)
    sid, run_id = started(sessions)
    keys.sealed.clear()
    with sessions.hold(sid, run_id):
        await sessions.change_on_loop(bridge, sessions.start_run, sid, run_id, "w")
        author = uuid4()
        await sessions.change_on_loop(
            bridge, sessions.append_user_message, sid, "secret", author_id=author
        )
        assert loop.inserts == 0 and keys.sealed == [author], "sealed on the thread"
        keys.loaded.add(author)
        await sessions.change_on_loop(
            bridge, sessions.append_user_message, sid, "again", author_id=author
        )
    assert loop.inserts == 1 and keys.sealed == [author, author], "then on the loop"


async def test_a_stream_s_read_on_the_loop_gives_the_thread_s_events() -> None:
    """The events after a version, read from the loop: those the thread reads, decoded
    on the loop while their authors' keys are in memory, on the thread when not."""
    sessions = in_memory_sessions()
    sessions.loop_recorder = Watched(sessions)
    keys = Keys()
    sessions.seal_with(keys)
    sid, _ = started(sessions)
    author = uuid4()
    sessions.append_user_message(sid, "secret", author_id=author)
    sessions.update_plan(sid, plan("d"))

    def seen(events: Sequence[object]) -> list[tuple[int, str, object]]:
        return [(e.originator_version, type(e).__name__, vars(e)) for e in events]  # type: ignore[attr-defined]

    expected = seen(list(sessions.session_events(sid, after=2)))
    assert [v for v, _, _ in expected] == [3, 4, 5] and "secret" in str(expected)
    bridge = CountingBridge()
    try:
        assert seen(await sessions.events_after_on_loop(bridge, sid, 2)) == expected
        assert bridge.calls == 1, "the author's key is not in memory: read on the thread"
        keys.loaded.add(author)
        assert seen(await sessions.events_after_on_loop(bridge, sid, 2)) == expected
        assert bridge.calls == 1, "with the key held, decoded on the loop"
        sessions.loop_recorder = Watched(sessions, busy=True)
        assert seen(await sessions.events_after_on_loop(bridge, sid, 2)) == expected
        assert bridge.calls == 2, "a busy pool: through the thread"
    finally:
        bridge.close()


class Keys:
    """Personal keys in a dict; `loaded` are those held in memory."""

    def __init__(self) -> None:
        self.loaded: set[UUID] = set()
        self.sealed: list[UUID] = []

    def seal(self, user_id: UUID, text: str) -> str:
        self.sealed.append(user_id)
        return f"sealed:{user_id}:{text[::-1]}"

    def is_sealed(self, value: str) -> bool:
        return value.startswith("sealed:")

    def held(self, user_id: UUID) -> bool:
        return user_id in self.loaded

    def open(self, sealed: str, where: str) -> str:
        return sealed.rpartition(":")[2][::-1]


async def test_the_next_message_and_its_run_read_nothing_back_from_the_log(
    tmp_path: Path,
) -> None:
    """The message is written on the aggregate the session's last run left here, and the
    run writes on it: the second exchange reads no event back, and every write of it
    goes from the loop."""
    engine = make_engine(scripted({"text": "One."}, {"text": "Two."}), tmp_path)
    sessions = engine.sessions
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "first")
    assert await engine.scheduler.wait(sid) == "completed"
    reads = reads_of(sessions)
    loop = Watched(sessions)
    sessions.loop_recorder = loop
    await engine.scheduler.send_message(sid, "second")
    assert await engine.scheduler.wait(sid) == "completed"
    assert reads == []
    assert loop.inserts == 3  # the message, the run's start, its turn with its end
    kinds = [type(e).__name__ for e in sessions.session_events(sid)]
    assert kinds[-5:] == [
        "UserMessageAppended", "RunRequested", "RunStarted", "AssistantTurnRecorded",
        "RunCompleted",
    ]  # fmt: skip
