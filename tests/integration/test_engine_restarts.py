"""Runs survive their process: killed mid-tool or while waiting for a human."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from uuid import UUID, uuid4

import pytest

from adapters.container import Container
from tests.integration.support import started_work

pytestmark = [pytest.mark.integration, pytest.mark.slow]


STARTED: list[subprocess.Popen[str]] = []


@pytest.fixture(autouse=True)
def no_engine_left_behind() -> Iterator[None]:
    yield
    for process in STARTED:
        if process.poll() is None:
            process.kill()
            process.wait()
    STARTED.clear()


def engine(
    container: Container, database_url: str, nats_url: str, workdir: Path, mode: str, sid: UUID
) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.integration.engine_process", database_url, nats_url,
         container.settings.nats_stream, str(workdir), mode, str(sid)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    STARTED.append(process)
    return process


def kinds(container: Container, sid: UUID) -> list[str]:
    return [type(e).__name__ for e in container.sessions.session_events(sid)]


async def until(check, what: str, timeout: float = 60) -> None:  # type: ignore[no-untyped-def]
    for _ in range(int(timeout / 0.05)):
        if check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def new_session(container: Container, workdir: Path, ask: str) -> UUID:
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "ask.txt").write_text(ask)
    return container.sessions.start_session(
        workspace_id=uuid4(), owner_id=uuid4(), title=ask
    ).session_id


async def test_a_run_killed_while_a_tool_runs_finishes_after_restart_without_rerunning_it(
    container: Container, database_url: str, nats_url: str, tmp_path: Path
) -> None:
    sid = new_session(container, tmp_path, "do the slow work")
    first = engine(container, database_url, nats_url, tmp_path, "start", sid)
    await until(lambda: started_work(tmp_path), "the tool to start")
    first.send_signal(signal.SIGKILL)
    first.wait()
    assert kinds(container, sid)[-1] == "ToolCallRequested"

    second = engine(container, database_url, nats_url, tmp_path, "recover", sid)
    out, _ = await asyncio.to_thread(second.communicate, timeout=120)
    assert "recovered 1: completed" in out
    result = [
        e
        for e in container.sessions.session_events(sid)
        if type(e).__name__ == "ToolResultRecorded"
    ]
    assert [r.status for r in result] == ["interrupted"]  # type: ignore[attr-defined]
    assert kinds(container, sid)[-1] == "RunCompleted"
    assert (tmp_path / "slow_work.log").read_text().splitlines() == ["job-1"], "the tool ran again"


async def test_a_pending_approval_survives_a_kill_and_the_run_finishes_once_approved(
    container: Container, database_url: str, nats_url: str, tmp_path: Path
) -> None:
    sid = new_session(container, tmp_path, "deploy the release")
    first = engine(container, database_url, nats_url, tmp_path, "start", sid)
    await until(lambda: "ConfirmationRequested" in kinds(container, sid), "the approval request")
    first.send_signal(signal.SIGKILL)
    first.wait()

    recovering = engine(container, database_url, nats_url, tmp_path, "recover", sid)
    out, _ = await asyncio.to_thread(recovering.communicate, timeout=120)
    assert "recovered 1: suspended" in out, "the pending request was found in the log"
    assert not (tmp_path / "deploy.log").exists()

    approving = engine(container, database_url, nats_url, tmp_path, "approve", sid)
    out, _ = await asyncio.to_thread(approving.communicate, timeout=120)
    assert "approved: completed" in out
    assert (tmp_path / "deploy.log").read_text().splitlines() == ["job-1"]
    assert kinds(container, sid)[-3:] == [
        "ToolResultRecorded",
        "AssistantTurnRecorded",
        "RunCompleted",
    ]
