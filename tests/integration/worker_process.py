"""A `tokendance worker` as a process of its own, for takeover tests on real Postgres and NATS.

    python -m tests.integration.worker_process DB NATS STREAM WORKDIR ACK_WAIT

Drives runs from the runs work queue with the tools of `engine_process` (they write to
WORKDIR, so a test can tell what ran, and how often) and its stateless model, plus a
slow answer: a message asking for one is answered after a minute by the first worker
that tries, at once by any later one (each try is a line in WORKDIR/answers.log).
Prints `ready` once it takes runs; the test kills it.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from adapters.bootstrap import bootstrap
from adapters.bootstrap.background import NO_BACKGROUND
from adapters.bootstrap.parts import build_tools
from adapters.bootstrap.roles import build_worker
from adapters.config.settings import Settings
from adapters.deltas import NullDeltaSink
from adapters.llm.scripted import ScriptedLLM
from domain.conversation import ModelRequest
from tests.integration.engine_process import Deploy, SlowWork
from tests.integration.engine_process import model as tool_model

SLOW_ANSWER = "answer slowly"


def model_for(workdir: Path) -> object:
    def model(request: ModelRequest) -> dict[str, object]:
        asked = str(request.messages[0].content[0])
        if SLOW_ANSWER not in asked:
            return tool_model(request)
        log = workdir / "answers.log"
        tries = len(log.read_text().splitlines()) if log.exists() else 0
        with log.open("a") as f:
            f.write("try\n")
        if tries == 0:
            return {"delay": 60, "text": "too late: this worker is killed first"}
        return {"text": "answered by the worker that took the run over"}

    return model


async def main(db: str, nats: str, stream: str, workdir: Path, ack_wait: int) -> None:
    settings = Settings(
        nats_stream=stream, data_dir=workdir, run_ack_wait=ack_wait, run_sweep=ack_wait
    )
    system = bootstrap(
        settings,
        database_url=db,
        nats_url=nats,
        llm=ScriptedLLM(model_for(workdir)),  # type: ignore[arg-type]
        tools=[*build_tools(settings), SlowWork(workdir), Deploy(workdir)],
        deltas=NullDeltaSink(),
        background=NO_BACKGROUND,
    )
    await system.services.start()
    print("ready", flush=True)
    try:
        await build_worker(system).run()
    finally:
        await system.stop()
        system.close()


if __name__ == "__main__":
    db, nats_url, stream_name, work, ack = sys.argv[1:6]
    asyncio.run(main(db, nats_url, stream_name, Path(work), int(ack)))
