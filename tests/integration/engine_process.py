"""The engine as a process of its own, for restart tests on real Postgres and NATS.

    python -m tests.integration.engine_process DB NATS STREAM WORKDIR start SESSION
    python -m tests.integration.engine_process DB NATS STREAM WORKDIR recover SESSION
    python -m tests.integration.engine_process DB NATS STREAM WORKDIR approve SESSION

`start` sends the message and then waits forever (the test kills it); `recover`
resumes what a dead process left and exits when the run ends or waits for approval;
`approve` approves the pending confirmation and exits when the run ends. The tools
write to WORKDIR, so the test can tell what ran, and how often.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from uuid import UUID

import msgspec

from adapters.bootstrap import bootstrap
from adapters.bootstrap.parts import build_tools
from adapters.bootstrap.roles import recover_runs
from adapters.config.settings import Settings
from adapters.deltas import NullDeltaSink
from adapters.llm.scripted import ScriptedLLM
from application.tools.base import Tool, ToolContext
from domain.conversation import ModelRequest, ToolResultBlock
from domain.session import AgentSession


class WorkArgs(msgspec.Struct):
    name: str


class SlowWork(Tool[WorkArgs]):
    name = "slow_work"
    description = "Works for a long time."
    Args = WorkArgs
    timeout = 120.0

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir

    async def run(self, args: WorkArgs, context: ToolContext) -> str:
        with (self.workdir / "slow_work.log").open("a") as f:
            f.write(f"{args.name}\n")
        await asyncio.sleep(60)
        return "worked"


class Deploy(Tool[WorkArgs]):
    name = "deploy"
    description = "Deploys to production."
    Args = WorkArgs
    risky = True

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir

    async def run(self, args: WorkArgs, context: ToolContext) -> str:
        with (self.workdir / "deploy.log").open("a") as f:
            f.write(f"{args.name}\n")
        return f"deployed {args.name}"


def model(request: ModelRequest) -> dict[str, object]:
    """Stateless, so any process can play the next turn: it reads the conversation."""
    results = [b for m in request.messages for b in m.content if isinstance(b, ToolResultBlock)]
    asked = str(request.messages[0].content[0])
    if results:
        return {"text": f"finished after: {results[-1].content[:40]}"}
    tool = "deploy" if "deploy" in asked else "slow_work"
    return {"tool_calls": [{"name": tool, "input": {"name": "job-1"}, "id": "toolu_job1"}]}


async def main(db: str, nats: str, stream: str, workdir: Path, mode: str, session: UUID) -> None:
    settings = Settings(nats_stream=stream, data_dir=workdir)  # blobs in WORKDIR / "blobs"
    system = bootstrap(
        settings,
        database_url=db,
        nats_url=nats,
        llm=ScriptedLLM(model),
        tools=[*build_tools(settings), SlowWork(workdir), Deploy(workdir)],
        deltas=NullDeltaSink(),
    )
    container, engine = system.container, system.engine
    await system.services.start()
    if mode == "start":
        text = (workdir / "ask.txt").read_text()
        await engine.scheduler.send_message(session, text)
        print("started", flush=True)
        await asyncio.Event().wait()
    elif mode == "recover":
        count = await recover_runs(container, engine)
        end = await engine.scheduler.wait(session)
        print(f"recovered {count}: {end}", flush=True)
    elif mode == "approve":
        asked = [
            e
            for e in container.sessions.session_events(session)
            if isinstance(e, AgentSession.ConfirmationRequested)
        ]
        await engine.scheduler.confirm(session, asked[-1].action_id, True, None, "tester")
        print(f"approved: {await engine.scheduler.wait(session)}", flush=True)
    await system.stop()
    system.close()


if __name__ == "__main__":
    db, nats_url, stream_name, work, mode_, sid = sys.argv[1:7]
    asyncio.run(main(db, nats_url, stream_name, Path(work), mode_, UUID(sid)))
