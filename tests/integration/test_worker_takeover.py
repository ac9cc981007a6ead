"""A worker killed mid-run: another takes the run over from the log, and nothing runs twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from uuid import UUID, uuid4

import nats
import pytest

from adapters.container import Container
from adapters.nats.run_queue import RunQueue
from domain.session import AgentSession as S
from tests.integration.test_engine_restarts import started_work
from tests.integration.worker_process import SLOW_ANSWER
from tests.waiting import eventually_async

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ACK_WAIT = 2  # seconds without a heartbeat before a run goes to another worker


@pytest.fixture
def workers(container: Container, database_url: str, nats_url: str, tmp_path: Path) -> Iterator[
    list[subprocess.Popen[str]]
]:  # fmt: skip
    """Two worker processes sharing the test's servers and one work directory."""
    started = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.integration.worker_process",
                database_url,
                nats_url,
                container.settings.nats_stream,
                str(tmp_path),
                str(ACK_WAIT),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for process in started:
        assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait()


@pytest.fixture
async def queue(container: Container, nats_url: str) -> AsyncIterator[RunQueue]:
    nc = await nats.connect(nats_url)
    yield RunQueue(lambda: nc, container.settings.nats_runs_stream)
    await nc.close()


async def ask(container: Container, queue: RunQueue, text: str) -> UUID:
    """What the API does for a chat message: the message and run request, then the queue."""
    sessions = container.sessions
    sid = sessions.start_session(workspace_id=uuid4(), owner_id=uuid4(), title=text).session_id
    run_id = uuid4()
    receipt = sessions.submit_message(sid, text, run_id)
    await queue.dispatch(sid, run_id, receipt.version)
    return sid


def log_of(container: Container, sid: UUID) -> list[S.Event]:
    return list(container.sessions.session_events(sid))


def kill_holder(container: Container, sid: UUID, workers: list[subprocess.Popen[str]]) -> str:
    holder = container.sessions.get_session(sid).run_worker
    assert holder is not None
    pid = int(holder.rsplit(":", 1)[1])
    assert pid in [w.pid for w in workers], holder
    os.kill(pid, signal.SIGKILL)
    return holder


def ended(container: Container, sid: UUID) -> bool:
    return any(isinstance(e, S.RunCompleted | S.RunFailed) for e in log_of(container, sid))


async def test_a_worker_killed_mid_tool_hands_the_run_over_and_the_tool_is_not_rerun(
    container: Container, queue: RunQueue, workers: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    sid = await ask(container, queue, "please do the slow work")
    await eventually_async(lambda: started_work(tmp_path), what="the tool to start")
    killed = kill_holder(container, sid, workers)
    await eventually_async(lambda: ended(container, sid), what="the run to end")

    events = log_of(container, sid)
    assert [type(e).__name__ for e in events].count("RunCompleted") == 1
    starts = [e.worker for e in events if isinstance(e, S.RunStarted)]
    assert starts[0] == killed and len(starts) == 2 and starts[1] != killed
    results = [e for e in events if isinstance(e, S.ToolResultRecorded)]
    assert [(r.tool_use_id, r.status) for r in results] == [("toolu_job1", "interrupted")]
    assert (tmp_path / "slow_work.log").read_text().splitlines() == ["job-1"]  # ran once
    turns = [e for e in events if isinstance(e, S.AssistantTurnRecorded)]
    assert len(turns) == 2  # the call, then the answer after the interrupted result


async def test_a_worker_killed_mid_model_stream_hands_the_run_over(
    container: Container, queue: RunQueue, workers: list[subprocess.Popen[str]], tmp_path: Path
) -> None:
    sid = await ask(container, queue, f"please {SLOW_ANSWER}")
    answers = tmp_path / "answers.log"
    await eventually_async(lambda: answers.exists(), what="the model to be asked")
    kill_holder(container, sid, workers)
    await eventually_async(lambda: ended(container, sid), what="the run to end")

    events = log_of(container, sid)
    turns = [e for e in events if isinstance(e, S.AssistantTurnRecorded)]
    assert len(turns) == 1 and "took the run over" in str(turns[0].content)
    assert [type(e).__name__ for e in events].count("RunCompleted") == 1
    assert len(answers.read_text().splitlines()) == 2  # the killed stream, then the new one
