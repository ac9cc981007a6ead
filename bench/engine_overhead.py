"""The engine's own time per agent step, with the model's and the tools' time taken out.

One session of 200 steps, each a scripted turn calling `note_progress` and then its
result, on the in-memory event store (and on embedded Postgres with `--postgres`).

python -m bench.engine_overhead [--postgres] [--steps N]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import tempfile
from pathlib import Path

from adapters.llm.scripted import ScriptedLLM
from application.bridge import SyncBridge
from application.engine_settings import EngineSettings
from application.sessions import SessionService
from bench.engine_harness import StepClock, build_engine
from bench.harness import bench_system, cores, median, percentile
from domain.conversation import ModelRequest

WARM_UP_STEPS = 20
TARGET_MS = 2.0


def progress_model(steps: int) -> ScriptedLLM:
    """`steps` turns each calling note_progress, then a final answer."""

    def turn(request: ModelRequest) -> dict[str, object]:
        # ScriptedLLM keeps every request; a real adapter does not, and 200 requests of
        # up to 400 messages make multi-millisecond GC passes that are the bench's own.
        llm.requests.clear()
        done = sum(1 for m in request.messages if m.role == "assistant")
        usage = {"input": 1000 + 40 * done, "output": 30}
        if done >= steps:
            return {"text": "All steps are done.", "usage": usage}
        note = {"text": f"finished step {done + 1} of {steps}"}
        return {"tool_calls": [{"name": "note_progress", "input": note}], "usage": usage}

    llm = ScriptedLLM(turn)
    return llm


async def measure(
    steps: int, blobs: Path, sessions: SessionService | None, bridge: SyncBridge | None = None
) -> StepClock:
    """The clock of one session of `steps` steps, run after a short warm-up session."""
    engine = build_engine(
        progress_model(steps),
        blobs,
        sessions=sessions,
        bridge=bridge,
        settings=EngineSettings(max_iterations=steps + 5),
    )
    warm = build_engine(
        progress_model(WARM_UP_STEPS),
        blobs,
        sessions=engine.sessions,
        bridge=engine.bridge,
        settings=EngineSettings(max_iterations=WARM_UP_STEPS + 5),
    )
    await warm.run_session("warm up")
    # Like a long-running server after start-up: what the imports built (anthropic,
    # pydantic, ...) is never collected, and a full GC pass over it (~90 ms here)
    # would land in one step. gc.freeze() keeps it out of later passes.
    gc.collect()
    gc.freeze()
    _, clock, end = await engine.run_session("work through the steps")
    assert end == "completed", end
    assert len(clock.model_calls) == steps + 1
    return clock


def report(store: str, clock: StepClock) -> None:
    ms = [o * 1000 for o in clock.overheads()]
    with_tools = [o * 1000 for o in clock.overheads(with_tools=True)]
    target = f" (target <= {TARGET_MS} ms)" if store == "in-memory" else ""
    print(f"[{store}] steps measured:                 {len(ms)}")
    print(f"[{store}] overhead per step median:       {median(ms):.3f} ms{target}")
    print(f"[{store}] overhead per step p99:          {percentile(ms, 99):.3f} ms")
    print(f"[{store}] overhead per step max:          {max(ms):.3f} ms")
    print(f"[{store}] median of steps 1-20:           {median(ms[:20]):.3f} ms")
    print(f"[{store}] median of the last 20 steps:    {median(ms[-20:]):.3f} ms")
    # note_progress's run is itself one event append (ProgressNoted), so this counts it.
    print(
        f"[{store}] with tool time, median / p99:   {median(with_tools):.3f} / "
        f"{percentile(with_tools, 99):.3f} ms"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", action="store_true", help="also on embedded Postgres")
    parser.add_argument("--steps", type=int, default=200)
    options = parser.parse_args()
    print(f"cores: {cores()}")
    with tempfile.TemporaryDirectory(prefix="tokendance-bench-blobs-") as blobs:
        report("in-memory", asyncio.run(measure(options.steps, Path(blobs), None)))
        if options.postgres:
            with bench_system() as system:
                c = system.container
                clock = asyncio.run(measure(options.steps, Path(blobs), c.sessions, c.bridge))
                report("postgres", clock)


if __name__ == "__main__":
    main()
