"""A command's copy of a cached aggregate: containers of its own, values shared.

The repository's cache hands out deep copies so that a command that fails leaves the
cached aggregate as it was; `ValueState` makes those copies cheap. These tests hold it to
both halves: a copy changed by commands leaves the original untouched, and everything
the aggregates hold is immutable (so sharing it is safe). The second would catch a
mutable value added to their state later.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
from collections.abc import Iterator
from datetime import UTC, date, datetime
from decimal import Decimal
from uuid import UUID, uuid4

from adapters.bootstrap.in_memory import in_memory_sessions
from domain.authors import ByUser
from domain.memories import MemoryNamespace
from domain.memory_values import MemorySource, Namespace
from domain.values import SourceSeen

ALICE = ByUser(UUID(int=1))
IMMUTABLE = (str, bytes, int, float, bool, type(None), UUID, datetime, date, Decimal, enum.Enum)


def values(value: object) -> Iterator[object]:
    """Every value held, containers opened."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from values(k)
            yield from values(v)
    elif isinstance(value, list | set | tuple | frozenset):
        for item in value:
            yield from values(item)
    else:
        yield value


def mutable_values(aggregate: object) -> list[str]:
    found = []
    for name, held in vars(aggregate).items():
        for value in values(held):
            frozen = dataclasses.is_dataclass(value) and value.__dataclass_params__.frozen  # type: ignore[union-attr]
            if not (isinstance(value, IMMUTABLE) or frozen):
                found.append(f"{name}: {type(value).__qualname__}")
    return found


def namespace_with(n: int) -> MemoryNamespace:
    aggregate = MemoryNamespace.create(Namespace("user", uuid4()), None)
    now = datetime.now(UTC)
    for i in range(n):
        aggregate.remember(f"memory {i}", "knowledge", MemorySource(), None, ALICE, now)
    aggregate.collect_events()  # as the cache holds it: saved
    return aggregate


def test_a_namespace_copied_for_a_command_leaves_the_cached_one_as_it_was() -> None:
    cached = namespace_with(3)
    before = (dict(cached.memories), dict(vars(cached)["_by_text"]), cached.version)
    command = copy.deepcopy(cached)
    [first, *_] = command.memories
    command.remember("a new one", "preference", MemorySource(), None, ALICE, datetime.now(UTC))
    command.update(first, ALICE, datetime.now(UTC), text="changed")
    command.forget(first, ALICE)
    assert len(command.collect_events()) == 3 and command.version == cached.version + 3
    assert (dict(cached.memories), dict(vars(cached)["_by_text"]), cached.version) == before
    assert cached.collect_events() == []
    assert command.memories is not cached.memories


def test_a_session_copied_for_a_command_leaves_the_cached_one_as_it_was() -> None:
    sessions = in_memory_sessions()
    sid = sessions.start_session(workspace_id=uuid4(), owner_id=uuid4(), title="t").session_id
    run = uuid4()
    sessions.append_user_message(sid, "hello")
    sessions.request_run(sid, run)
    sessions.start_run(sid, run, "w1")
    sessions.request_tool_call(sid, "t1", "web_search", {"query": "q"})
    sessions.record_sources(sid, "t1", [SourceSeen("https://a.example", "A")])
    cached = sessions.get_session(sid)
    before = {k: copy.copy(v) for k, v in vars(cached).items()}
    command = copy.deepcopy(cached)
    command.request_tool_call("t2", "code_execute", {"code": "1"}, "risky")
    command.request_confirmation("a1", "t2", "code_execute", {"code": "1"}, "run it")
    assert command.pending_confirmations and not cached.pending_confirmations
    assert {k: v for k, v in vars(cached).items()} == before
    assert mutable_values(cached) == [], "everything shared between copies is immutable"


def test_everything_a_namespace_holds_is_immutable() -> None:
    assert mutable_values(namespace_with(5)) == []
