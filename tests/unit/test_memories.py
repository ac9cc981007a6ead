"""Long-term memory on the write side: the namespace aggregate and the service (on the
in-memory store, searched by brute force): what is remembered, merged, changed and
forgotten, and what bad input is refused with nothing written."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from uuid import uuid4

import pytest

import application.memories
from adapters.bootstrap.in_memory import in_memory_accounts
from application.bridge import SyncBridge
from application.memories import Memories
from domain.authors import ByAgent, ByUser
from domain.memories import MemoryNamespace
from domain.memory_values import (
    MAX_TEXT,
    AlreadyLearned,
    InvalidMemory,
    MemoryNotFound,
    MemoryScope,
    MemorySource,
    Namespace,
)
from tests.fakes.engine import in_memory_memories

NOW = datetime(2026, 11, 26, tzinfo=UTC)
USER = ByUser(uuid4())


def fresh() -> MemoryNamespace:
    return MemoryNamespace.create(Namespace("user", uuid4()), None)


def test_remember_update_forget_each_an_event_with_its_author() -> None:
    ns = fresh()
    memory = ns.remember(
        "Prefers tables over charts", "preference", MemorySource(), None, USER, NOW
    )
    agent = ByAgent(uuid4())
    changed = ns.update(memory.memory_id, agent, NOW, text="Prefers tables to charts")
    assert (changed.revision, changed.created_by, changed.updated_by) == (2, USER, agent)
    ns.forget(memory.memory_id, USER)
    kinds = [type(e).__name__ for e in ns.collect_events()]
    assert kinds == ["NamespaceCreated", "MemoryRemembered", "MemoryUpdated", "MemoryForgotten"]
    assert ns.memories == {}
    with pytest.raises(MemoryNotFound):
        ns.get(memory.memory_id)


def test_the_same_text_updates_the_memory_it_repeats() -> None:
    ns = fresh()
    first = ns.remember("Ships on  Fridays", "history", MemorySource(), None, USER, NOW)
    again = ns.remember("ships on fridays", "knowledge", MemorySource(), None, USER, NOW)
    assert again.memory_id == first.memory_id and again.category == "knowledge"
    same = ns.remember("ships on fridays", "knowledge", MemorySource(), None, USER, NOW)
    assert same.revision == again.revision == 2  # nothing new to record the third time
    assert len(ns.memories) == 1


def test_a_session_event_is_learned_from_once_even_after_its_memory_is_forgotten() -> None:
    ns, session = fresh(), uuid4()
    taught = MemorySource(session, 7)
    agent = ByAgent(session)
    memory = ns.remember("Heat pumps cut bills by 30%", "knowledge", taught, None, agent, NOW)
    with pytest.raises(AlreadyLearned):
        ns.remember("Heat pumps cut bills by 30%", "knowledge", taught, None, agent, NOW)
    ns.forget(memory.memory_id, USER)
    with pytest.raises(AlreadyLearned):  # what a user forgot stays forgotten
        ns.remember("Heat pumps cut bills by 30%", "knowledge", taught, None, agent, NOW)
    assert ns.memories == {}
    # Another event of the session, and sources that are no session event, are new.
    ns.remember("Heat pumps cut bills by 30%", "knowledge", MemorySource(session, 8), None,
                agent, NOW)  # fmt: skip
    for _ in range(2):
        ns.remember("Solar pays back in 9 years", "knowledge", MemorySource(), None, USER, NOW)
    assert len(ns.memories) == 2


def test_an_event_that_only_confirmed_a_memory_is_noted_as_learned_from() -> None:
    ns, session = fresh(), uuid4()
    mine = ns.remember("Reports go to finance", "knowledge", MemorySource(), None, USER, NOW)
    edited = ns.update(mine.memory_id, USER, NOW, text="Reports go to finance@example.org")
    taught = MemorySource(session, 3)
    confirmed = ns.remember("reports go to FINANCE@example.org", "knowledge", taught, None,
                            ByAgent(session), NOW)  # fmt: skip
    assert confirmed.memory_id == mine.memory_id and ns.learned(taught)
    again = ns.update(mine.memory_id, USER, NOW, text="Reports go to the CFO")
    with pytest.raises(AlreadyLearned):  # would put back the text the user changed
        ns.remember("Reports go to finance@example.org", "knowledge", taught, None,
                    ByAgent(session), NOW)  # fmt: skip
    assert ns.get(mine.memory_id).text == again.text != edited.text
    # Close in meaning (`similar`, the index's answer) merges the same way.
    other = MemorySource(session, 4)
    ns.remember("Reports go to our CFO", "knowledge", other, None, ByAgent(session), NOW,
                similar=mine.memory_id)  # fmt: skip
    assert len(ns.memories) == 1 and ns.learned(other)
    replayed: MemoryNamespace | None = None
    for e in ns.collect_events():  # what a repository does when it loads the namespace
        replayed = e.mutate(replayed)
    assert replayed is not None and replayed.learned(taught) and replayed.learned(other)


@pytest.mark.parametrize(
    ("text", "category", "expires_at"),
    [
        ("", "preference", None),
        ("   \n", "preference", None),
        ("x" * (MAX_TEXT + 1), "preference", None),
        ("fine", "opinion", None),
        ("fine", "preference", NOW - timedelta(seconds=1)),
        ("fine", "preference", datetime(2030, 1, 1)),  # no time zone
    ],
)
def test_bad_input_is_refused_and_records_nothing(
    text: str, category: str, expires_at: datetime | None
) -> None:
    ns = fresh()
    ns.collect_events()
    with pytest.raises(InvalidMemory):
        ns.remember(text, category, MemorySource(), expires_at, USER, NOW)
    assert ns.collect_events() == []


@pytest.mark.parametrize(
    "name", ["", "user", "org:efa0f3be-7fda-4512-bf8c-0f161a286a31", "team:not-an-id", "user:"]
)
def test_a_malformed_namespace_is_refused(name: str) -> None:
    with pytest.raises(InvalidMemory):
        Namespace.parse(name)


def test_a_session_source_names_session_and_version_together() -> None:
    with pytest.raises(InvalidMemory):
        MemorySource(uuid4(), None)


def test_a_scope_names_its_namespaces_and_refuses_others() -> None:
    owner, workspace, team = uuid4(), uuid4(), uuid4()
    scope = MemoryScope(owner, workspace, uuid4(), team)
    assert [str(n) for n in scope.namespaces] == [
        f"user:{owner}",
        f"workspace:{workspace}",
        f"team:{team}",
    ]
    assert scope.namespace(None) == Namespace("user", owner)
    assert MemoryScope(owner, workspace, None, None).namespaces[-1].kind == "workspace"
    with pytest.raises(InvalidMemory):
        MemoryScope(owner, workspace, None, None).namespace("team")


@pytest.fixture
def memories() -> Memories:
    return in_memory_memories(SyncBridge(2))


async def test_a_near_duplicate_updates_the_memory_instead_of_adding_one(
    memories: Memories,
) -> None:
    ns = Namespace("user", uuid4())
    first = await memories.remember(ns, "The user prefers metric units", "preference", USER,
                                    organization_id=None)  # fmt: skip
    near = await memories.remember(ns, "The user prefers metric units.", "preference", USER,
                                   organization_id=None)  # fmt: skip
    other = await memories.remember(ns, "Quarterly report is due in March", "knowledge", USER,
                                    organization_id=None)  # fmt: skip
    assert (first.updated, near.updated, other.updated) == (False, True, False)
    assert near.memory.memory_id == first.memory.memory_id
    assert [m.text for m in await memories.list(ns)] == [
        "The user prefers metric units.",
        "Quarterly report is due in March",
    ]


async def test_search_finds_only_the_namespaces_asked_and_not_expired(memories: Memories) -> None:
    mine, theirs = Namespace("user", uuid4()), Namespace("user", uuid4())
    await memories.remember(mine, "Heat pumps save energy in winter", "knowledge", USER,
                            organization_id=None)  # fmt: skip
    await memories.remember(theirs, "Heat pumps are loud", "knowledge", USER,
                            organization_id=None)  # fmt: skip
    soon = datetime.now(UTC) + timedelta(milliseconds=200)
    await memories.remember(mine, "Heat pump grant ends soon", "knowledge", USER,
                            organization_id=None, expires_at=soon)  # fmt: skip
    found = await memories.search("heat pumps", [mine], k=5)
    assert {h.text for h in found} == {
        "Heat pumps save energy in winter",
        "Heat pump grant ends soon",
    }
    memories.clock = lambda: soon + timedelta(seconds=1)
    for _ in range(200):  # the index has its own clock: until the expiry has passed there
        if len(await memories.search("heat pumps", [mine], k=5)) == 1:
            break
        await asyncio.sleep(0.05)
    assert [h.text for h in await memories.search("heat pumps", [mine], k=5)] == [
        "Heat pumps save energy in winter"
    ]
    assert len(await memories.list(mine)) == 1
    assert len(await memories.list(mine, include_expired=True)) == 2


@pytest.mark.parametrize("k", [0, 101, -1])
async def test_k_out_of_range_is_refused(memories: Memories, k: int) -> None:
    with pytest.raises(InvalidMemory):
        await memories.search("anything", [Namespace("user", uuid4())], k=k)


async def test_forget_and_update_of_an_unknown_memory_are_not_found(memories: Memories) -> None:
    ns = Namespace("user", uuid4())
    with pytest.raises(MemoryNotFound):
        await memories.forget(ns, uuid4(), USER)
    with pytest.raises(MemoryNotFound):
        await memories.update(ns, uuid4(), USER, text="x")


def namespace_state(ns: MemoryNamespace) -> dict[str, object]:
    return {k: v for k, v in vars(ns).items() if k != "_pending_events"}


def test_a_namespace_loads_from_its_snapshot_as_its_events_fold_it() -> None:
    accounts = in_memory_accounts(jwt_secret="s" * 32)
    assert accounts.snapshots is not None
    ns, session = fresh(), uuid4()
    agent = ByAgent(session)
    kept = ns.remember("Prefers tables", "preference", MemorySource(), None, USER, NOW)
    ns.remember("Heat pumps cut bills", "knowledge", MemorySource(session, 3), None, agent, NOW)
    gone = ns.remember("Old office in Bonn", "history", MemorySource(document="notes.md"),
                       NOW + timedelta(days=9), USER, NOW)  # fmt: skip
    ns.update(kept.memory_id, agent, NOW, text="Prefers tables to charts",
              expires_at=NOW + timedelta(days=30))  # fmt: skip
    ns.forget(gone.memory_id, USER)
    ns.remember("Prefers tables to charts", "preference", MemorySource(session, 5), None,
                agent, NOW)  # fmt: skip  # only confirms: the source is noted
    accounts.save(ns)
    accounts.take_snapshot(ns.id)
    [snapshot] = accounts.snapshots.get(ns.id)
    assert isinstance(snapshot, MemoryNamespace.Snapshot)
    loaded = accounts.repository.get(ns.id, version=ns.version)
    assert namespace_state(loaded) == namespace_state(ns)
    with pytest.raises(AlreadyLearned):  # the sources learned from came back too
        loaded.remember("Forgotten fact", "knowledge", MemorySource(session, 3), None, agent, NOW)
    # What comes after the snapshot folds onto it.
    ns.remember("Ships on Fridays", "history", MemorySource(session, 9), None, agent, NOW)
    accounts.save(ns)
    assert namespace_state(accounts.repository.get(ns.id, version=ns.version)) == namespace_state(
        ns
    )


async def test_a_namespace_is_snapshotted_as_it_grows_and_loads_from_it(
    memories: Memories, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(application.memories, "SNAPSHOT_INTERVAL", 4)
    store = memories.store
    assert store.snapshots is not None
    ns = Namespace("user", uuid4())
    for n in range(9):  # versions 2..10: snapshots as versions 4 and 8 are passed
        await memories.remember(ns, f"fact number {n} of many", "knowledge", USER,
                                organization_id=None)  # fmt: skip
    taken = [s.originator_version for s in store.snapshots.get(ns.aggregate_id)]
    assert taken == [4, 8]
    saved = store.repository.get(ns.aggregate_id)
    loaded = store.repository.get(ns.aggregate_id, version=saved.version)
    assert namespace_state(loaded) == namespace_state(saved)
