"""`tokendance replay` and `usage` on a store that holds nothing say where they looked
and that it was empty (issue 35 item 7), not just "no events"."""

from __future__ import annotations

from uuid import uuid4

import pytest

from adapters.commands.command_store import empty_store_note
from adapters.commands.demo import run_replay
from adapters.system import System

pytestmark = [pytest.mark.integration]


async def test_replay_on_an_empty_store_names_it_and_says_it_holds_nothing(
    system: System, capsys: pytest.CaptureFixture[str]
) -> None:
    assert await run_replay(system, uuid4()) is False
    said = capsys.readouterr().out
    assert f"tokendance replay: the data directory {system.settings.data_dir}" in said
    assert "holds no session events" in said and "--data-dir" in said


async def test_usage_on_an_empty_store_is_told_so_and_on_a_used_one_not(
    system: System, capsys: pytest.CaptureFixture[str]
) -> None:
    note = empty_store_note(system, "usage")
    assert note is not None and str(system.settings.data_dir) in note
    container = system.container
    await container.bridge(
        container.sessions.start_session,
        workspace_id=uuid4(), owner_id=uuid4(), title="t", task_type="general",
    )  # fmt: skip
    assert empty_store_note(system, "usage") is None
    session = uuid4()
    assert await run_replay(system, session) is False  # the store has events, not this one
    said = capsys.readouterr().out
    assert f"session {session} has no events in the data directory" in said
