"""Many sessions at once: steps per second overall, and the engine's own time per step.

200 sessions run together in one process, each 10 steps (9 turns calling a tool, then
a final answer) of a scripted model that takes 50 ms per turn. The engine's overhead
per step is measured as in `bench.engine_overhead` (wall minus model minus tools); under
load it also holds the time a step waits for the event loop and the store's threads.

python -m bench.concurrent_sessions [--postgres] [--sessions N] [--steps N] [--delay S]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import tempfile
import time
from pathlib import Path

from adapters.llm.scripted import ScriptedLLM
from application.bridge import SyncBridge
from application.engine_settings import EngineSettings
from application.sessions import SessionService
from bench.engine_harness import StepClock, build_engine
from bench.harness import bench_system, cores, median, percentile
from domain.conversation import ModelRequest

TOOLS = ("note_progress", "search", "record_finding")


def slow_model(steps: int, delay: float) -> ScriptedLLM:
    """`steps - 1` tool-calling turns then a final answer, each after `delay` seconds."""

    def turn(request: ModelRequest) -> dict[str, object]:
        llm.requests.clear()  # the bench keeps no requests (see bench.engine_overhead)
        done = sum(1 for m in request.messages if m.role == "assistant")
        usage = {"input": 1000 + 40 * done, "output": 30}
        if done >= steps - 1:
            return {"text": "Done.", "usage": usage, "delay": delay}
        tool = TOOLS[done % len(TOOLS)]
        args: dict[str, object] = {"text": f"step {done + 1}"}
        if tool == "search":
            args = {"query": f"step {done + 1}"}
        call = {"name": tool, "input": args}
        return {"thinking": "Next step.", "tool_calls": [call], "usage": usage, "delay": delay}

    llm = ScriptedLLM(turn)
    return llm


async def run_all(
    sessions_count: int,
    steps: int,
    delay: float,
    blobs: Path,
    sessions: SessionService | None,
    bridge: SyncBridge | None,
) -> tuple[list[StepClock], float, float]:
    engine = build_engine(
        slow_model(steps, delay),
        blobs,
        sessions=sessions,
        bridge=bridge,
        settings=EngineSettings(max_iterations=steps + 5),
    )
    await engine.run_session("warm up")
    gc.collect()
    gc.freeze()  # as in bench.engine_overhead: start-up objects stay out of GC passes
    started, cpu = time.perf_counter(), time.process_time()
    runs = await asyncio.gather(*(engine.run_session(f"task {n}") for n in range(sessions_count)))
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    ends = [end for _, _, end in runs]
    assert ends == ["completed"] * sessions_count, sorted(set(ends))
    clocks = [clock for _, clock, _ in runs]
    assert all(len(c.model_calls) == steps for c in clocks)
    return clocks, elapsed, cpu


def report(store: str, clocks: list[StepClock], elapsed: float, cpu: float, delay: float) -> None:
    steps = sum(len(c.model_calls) for c in clocks)
    ms = [o * 1000 for c in clocks for o in c.overheads()]
    per_session = steps // len(clocks)
    bound = len(clocks) / delay  # every session always waiting on its model
    print(f"[{store}] sessions x steps:               {len(clocks)} x {per_session}")
    print(f"[{store}] wall time:                      {elapsed:.2f} s")
    print(f"[{store}] steps per second:               {steps / elapsed:,.0f}")
    print(f"[{store}] steps per second if model-bound:  {bound:,.0f}")
    # Process CPU (all threads; the GIL makes it one core's worth at most).
    print(f"[{store}] CPU per step, all threads:      {cpu / steps * 1000:.2f} ms")
    print(f"[{store}] engine overhead per step median: {median(ms):.2f} ms")
    print(f"[{store}] engine overhead per step p99:    {percentile(ms, 99):.2f} ms")
    print(f"[{store}] engine overhead per step max:    {max(ms):.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres", action="store_true", help="on embedded Postgres")
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--delay", type=float, default=0.05, help="model seconds per turn")
    options = parser.parse_args()
    print(f"cores: {cores()}")
    args = (options.sessions, options.steps, options.delay)
    with tempfile.TemporaryDirectory(prefix="tokendance-bench-blobs-") as blobs:
        if options.postgres:
            with bench_system() as system:
                c = system.container
                print(f"[postgres] store threads (pool size + overflow): {c.bridge.max_workers}")
                clocks, elapsed, cpu = asyncio.run(
                    run_all(*args, Path(blobs), c.sessions, c.bridge)
                )
                report("postgres", clocks, elapsed, cpu, options.delay)
        else:
            clocks, elapsed, cpu = asyncio.run(run_all(*args, Path(blobs), None, None))
            report("in-memory", clocks, elapsed, cpu, options.delay)


if __name__ == "__main__":
    main()
