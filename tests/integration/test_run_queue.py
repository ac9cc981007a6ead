"""The runs work queue in one process: an API side that dispatches, a worker that drives.

Real Postgres and NATS; the model and tools are fakes that count what they were asked.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID, uuid4

import nats
import pytest
from eventsourcing.persistence import OperationalError

from adapters.bootstrap import bootstrap, replay_engine
from adapters.bootstrap.background import NO_BACKGROUND
from adapters.bootstrap.parts import build_tools
from adapters.bootstrap.roles import build_worker, dispatch_runs_to_workers
from adapters.config.settings import Settings
from adapters.deltas import NullDeltaSink
from adapters.llm.scripted import ScriptedLLM
from adapters.nats.run_queue import RunQueue
from adapters.processes.worker import Worker
from adapters.system import System
from application.ports import LLM
from application.replay import replay
from domain.conversation import ModelRequest, StreamItem
from domain.session import AgentSession as S
from schemas.runs import RunRequest
from tests.integration.engine_process import Deploy
from tests.waiting import eventually_async

pytestmark = pytest.mark.integration


class DatabaseAway:
    """A model call that fails as if the database went away, every time."""

    def __init__(self) -> None:
        self.calls = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        self.calls += 1
        raise OperationalError("the database is away")
        yield  # pragma: no cover


class Broken:
    """A model call that fails as a bug in the engine would: not retried."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        raise RuntimeError("boom")
        yield  # pragma: no cover


def answers(request: ModelRequest) -> dict[str, object]:
    """Deploys when asked to, waits a minute when asked to, else answers at once."""
    asked = str(request.messages[0].content[0])
    if "deploy" in asked and len(request.messages) == 1:
        return {"tool_calls": [{"name": "deploy", "input": {"name": "v2"}, "id": "toolu_d"}]}
    if "wait" in asked:
        return {"delay": 60, "text": "too late"}
    return {"text": "done"}


@dataclass
class Stack:
    system: System
    worker: Worker
    queue: RunQueue
    task: asyncio.Task[None]

    def events(self, sid: UUID) -> list[S.Event]:
        return list(self.system.container.sessions.session_events(sid))

    def count(self, sid: UUID, kind: type[S.Event]) -> int:
        return sum(isinstance(e, kind) for e in self.events(sid))

    async def until(self, check: Callable[[], bool], what: str) -> None:
        await eventually_async(lambda: asyncio.sleep(0, check()), what=what)

    async def queued(self) -> int:
        nc = self.system.services.nats
        assert nc is not None
        return (await nc.jetstream().stream_info(self.queue.name)).state.messages


MakeStack = Callable[..., Awaitable[Stack]]  # (llm, *, sweep=60)


@pytest.fixture
async def make_stack(
    settings: Settings, database_url: str, nats_url: str, tmp_path: Path
) -> AsyncIterator[MakeStack]:
    stacks: list[Stack] = []

    async def make(llm: LLM, *, sweep: int = 60) -> Stack:
        s = settings.override(run_ack_wait=2, run_max_deliveries=3, run_sweep=sweep)
        system = bootstrap(
            s, database_url=database_url, nats_url=nats_url, llm=llm, deltas=NullDeltaSink(),
            tools=[*build_tools(s), Deploy(tmp_path)], background=NO_BACKGROUND,
        )  # fmt: skip
        await system.services.start()
        queue = dispatch_runs_to_workers(system)  # this process is also an API replica
        worker = build_worker(system)
        worker.settings.retry_delay = 0.05
        stack = Stack(system, worker, queue, asyncio.create_task(worker.run()))
        stacks.append(stack)
        return stack

    yield make
    for stack in stacks:
        stack.task.cancel()
        await asyncio.gather(stack.task, return_exceptions=True)
        await stack.system.stop()
        stack.system.close()


def new_session(stack: Stack) -> UUID:
    sessions = stack.system.container.sessions
    return sessions.start_session(workspace_id=uuid4(), owner_id=uuid4(), title="t").session_id


async def test_a_run_requested_twice_runs_once(make_stack: MakeStack) -> None:
    stack = await make_stack(ScriptedLLM(answers))
    sid = new_session(stack)
    run_id = uuid4()
    receipt = stack.system.container.sessions.submit_message(sid, "hello", run_id)
    request = RunRequest(sid, run_id, receipt.version)
    for again in (request, request, RunRequest(sid, run_id, receipt.version + 1)):
        await stack.queue.publish(again)  # the last one is not a duplicate to JetStream
    await stack.until(lambda: stack.count(sid, S.RunCompleted) == 1, "the run to end")
    await eventually_async(lambda: _zero(stack), what="the queue to drain")
    assert stack.count(sid, S.RunStarted) == 1
    assert stack.count(sid, S.AssistantTurnRecorded) == 1
    assert stack.count(sid, S.RunCompleted) == 1


async def _zero(stack: Stack) -> bool:
    return await stack.queued() == 0


async def test_the_sweep_hands_out_a_run_whose_request_was_taken_and_not_driven(
    make_stack: MakeStack,
) -> None:
    """A request acked away with its run not started (here: delivered before the run was
    in the log, so the worker found nothing to drive) leaves the run to the sweep, which
    hands it out again at once, not once JetStream's duplicate window (two minutes) has
    forgotten the first request's id."""
    stack = await make_stack(ScriptedLLM(answers), sweep=1)
    sid, run_id = new_session(stack), uuid4()
    early = RunRequest(sid, run_id, 3)  # the version the message and its run will reach
    await stack.queue.publish(early)
    await eventually_async(lambda: _zero(stack), what="the early request to be acked away")
    receipt = stack.system.container.sessions.submit_message(sid, "hello", run_id)
    assert receipt.version == early.at_version  # not published: as if its request was lost
    await eventually_async(
        lambda: stack.count(sid, S.RunCompleted) == 1, timeout=20, what="the sweep's hand-out"
    )
    assert stack.count(sid, S.RunStarted) == 1


async def test_a_run_failing_on_every_delivery_fails_after_the_limit(make_stack: MakeStack) -> None:
    llm = DatabaseAway()
    stack = await make_stack(llm)
    sid = new_session(stack)
    await stack.system.engine.scheduler.send_message(sid, "hello")
    await stack.until(lambda: stack.count(sid, S.RunFailed) == 1, "the run to fail")
    failed = next(e for e in stack.events(sid) if isinstance(e, S.RunFailed))
    assert failed.error_code == "RUN_DELIVERY_EXHAUSTED"
    assert "the database is away" in failed.reason and "3" in failed.reason
    assert llm.calls == 3  # one try per delivery, then no more
    await eventually_async(lambda: _zero(stack), what="the queue to drain")


async def test_a_malformed_run_message_is_terminated_and_logged(
    make_stack: MakeStack, caplog: pytest.LogCaptureFixture
) -> None:
    stack = await make_stack(ScriptedLLM(answers))
    nc = await nats.connect(stack.system.container.nats_url)
    try:
        await stack.queue.ensure(nc.jetstream())
        await nc.jetstream().publish(
            f"{stack.queue.prefix}.request.nonsense", b"{not json", headers={"Nats-Msg-Id": "bad-1"}
        )
    finally:
        await nc.close()
    with caplog.at_level(logging.ERROR, logger="adapters.processes.worker"):
        await eventually_async(lambda: _zero(stack), what="the bad message to go")
    assert "terminating malformed run message bad-1" in caplog.text
    # Still taking runs after it.
    sid = new_session(stack)
    await stack.system.engine.scheduler.send_message(sid, "hello")
    await stack.until(lambda: stack.count(sid, S.RunCompleted) == 1, "the next run to end")


async def test_a_stop_reaches_the_worker_that_holds_the_run(make_stack: MakeStack) -> None:
    stack = await make_stack(ScriptedLLM(answers))
    sid = new_session(stack)
    await stack.system.engine.scheduler.send_message(sid, "please wait for me")
    await stack.until(lambda: sid in stack.worker._tasks, "the worker to hold the run")  # noqa: SLF001
    assert not stack.system.engine.scheduler.is_running(sid)  # driven by the worker only
    await stack.system.engine.scheduler.stop(sid)
    await stack.until(lambda: sid not in stack.worker._tasks, "the worker to let go")  # noqa: SLF001
    assert stack.count(sid, S.RunStopped) == 1
    assert stack.count(sid, S.AssistantTurnRecorded) == 0
    await eventually_async(lambda: _zero(stack), what="the queue to drain")


async def test_an_approval_resumes_the_run_on_a_worker(
    make_stack: MakeStack, tmp_path: Path
) -> None:
    stack = await make_stack(ScriptedLLM(answers))
    sid = new_session(stack)
    await stack.system.engine.scheduler.send_message(sid, "please deploy")
    await stack.until(lambda: stack.count(sid, S.ConfirmationRequested) == 1, "the approval ask")
    await eventually_async(lambda: _zero(stack), what="the suspended run's message to be acked")
    asked = next(e for e in stack.events(sid) if isinstance(e, S.ConfirmationRequested))
    await stack.system.engine.scheduler.confirm(sid, asked.action_id, True, None, "tester")
    await stack.until(lambda: stack.count(sid, S.RunCompleted) == 1, "the run to end")
    assert (tmp_path / "deploy.log").read_text().splitlines() == ["v2"]
    # The worker that resumed it said so (a claim), and the log still replays identically.
    assert stack.count(sid, S.RunStarted) == 2
    stored = stack.system.container.sessions.session_events(sid)
    report = await replay(list(stored), engine=replay_engine(stack.system.engine.runner))
    assert report.divergence is None, report.divergence


async def test_a_run_that_breaks_fails_at_once_with_the_error(make_stack: MakeStack) -> None:
    stack = await make_stack(Broken())
    sid = new_session(stack)
    await stack.system.engine.scheduler.send_message(sid, "hello")
    await stack.until(lambda: stack.count(sid, S.RunFailed) == 1, "the run to fail")
    failed = next(e for e in stack.events(sid) if isinstance(e, S.RunFailed))
    assert failed.error_code == "INTERNAL_ERROR" and "RuntimeError: boom" in failed.reason
    await eventually_async(lambda: _zero(stack), what="the queue to drain")


async def test_a_run_a_worker_drives_is_not_driven_by_a_recovering_serve(
    make_stack: MakeStack,
) -> None:
    stack = await make_stack(ScriptedLLM(answers))
    scheduler = stack.system.engine.scheduler
    sid = new_session(stack)
    await scheduler.send_message(sid, "please wait for me")
    await stack.until(lambda: sid in stack.worker._tasks, "the worker to hold the run")  # noqa: SLF001
    run_id = stack.system.container.sessions.get_session(sid).active_run
    assert run_id is not None
    scheduler.recover([(sid, run_id)])  # what `serve` does at start for every active run
    assert await scheduler.wait(sid) == "not_active"
    assert stack.count(sid, S.RunStarted) == 1 and sid in stack.worker._tasks  # noqa: SLF001
