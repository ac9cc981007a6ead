"""Shared set-up for the engine benchmarks: a runner whose model and tools time themselves.

The engine's own overhead per step is the wall time of the step minus the time spent
inside the model's stream (each `__anext__` of it, so the runner's own work between
items, such as publishing deltas, stays on the engine's side) minus the time spent
inside `tool.run`. A step runs from the start of one model call to the start of the
next (the last one to the end of the run). Each session's figures go to the
`StepClock` set in the context when its run was started.
"""

from __future__ import annotations

import functools
import hashlib
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from uuid import UUID, uuid4

import msgspec

from adapters.blobs.filesystem import FilesystemBlobStore
from adapters.bootstrap import bootstrap_engine
from adapters.bootstrap.parts import build_tools
from adapters.config.settings import Settings
from adapters.deltas import NullDeltaSink
from adapters.llm.tokens import CharRatioTokenCounter
from application.bridge import SyncBridge
from application.engine_settings import EngineSettings
from application.ports import LLM
from application.runner import AgentRunner, RunEnd
from application.runs import RunScheduler
from application.sessions import SessionService
from application.tools.base import AnyTool, Tool, ToolContext, ToolOutput
from domain.conversation import ModelRequest, StreamItem
from domain.values import SessionSettings


@dataclass
class StepClock:
    """Timestamps of one session's run, in `time.perf_counter` seconds."""

    model_calls: list[tuple[float, float]] = field(default_factory=list)  # (start, own time)
    tool_calls: list[tuple[float, float]] = field(default_factory=list)  # (start, own time)
    ended: float | None = None

    def overheads(self, *, with_tools: bool = False) -> list[float]:
        """Engine time of each step: wall minus model (minus tools unless `with_tools`), in s."""
        starts = [start for start, _ in self.model_calls]
        ends = [*starts[1:], self.ended if self.ended is not None else starts[-1]]
        result = []
        for (start, model), end in zip(self.model_calls, ends, strict=True):
            tools = sum(spent for at, spent in self.tool_calls if start <= at < end)
            result.append(end - start - model - (0.0 if with_tools else tools))
        return result


_clock: ContextVar[StepClock | None] = ContextVar("bench_step_clock", default=None)


class TimedLLM:
    """An `LLM` that adds the time spent inside its inner model to the current clock."""

    def __init__(self, inner: LLM) -> None:
        self.inner = inner

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        clock = _clock.get()
        start = time.perf_counter()
        spent = 0.0
        items = self.inner.stream(request).__aiter__()
        try:
            while True:
                t = time.perf_counter()
                try:
                    item = await items.__anext__()
                except StopAsyncIteration:
                    break
                finally:
                    spent += time.perf_counter() - t
                yield item
        finally:
            if clock is not None:
                clock.model_calls.append((start, spent))


ToolRun = Callable[[msgspec.Struct, ToolContext], Awaitable[str | ToolOutput]]


def time_tools(tools: list[AnyTool]) -> list[AnyTool]:
    """Make every tool add the time inside its `run` to the current clock."""
    for tool in tools:
        setattr(tool, "run", _timed(tool.run))  # noqa: B010 (an instance attribute shadows the method)
    return tools


def _timed(run: ToolRun) -> ToolRun:
    async def timed(args: msgspec.Struct, context: ToolContext) -> str | ToolOutput:
        clock = _clock.get()
        start = time.perf_counter()
        try:
            return await run(args, context)
        finally:
            if clock is not None:
                clock.tool_calls.append((start, time.perf_counter() - start))

    return timed


class QueryArgs(msgspec.Struct, forbid_unknown_fields=True):
    query: str


class PageSearch(Tool[QueryArgs]):
    """A web-search stand-in: a deterministic 500-2000 character answer per query."""

    name = "search"
    description = "Search the web and return the best matching passages with their urls."
    Args = QueryArgs

    async def run(self, args: QueryArgs, context: ToolContext) -> str:
        return search_results(args.query)


WORDS = ("heat", "pump", "efficiency", "cold", "climate", "coefficient", "defrost", "cycle")


@functools.lru_cache(maxsize=4096)  # the fake's own CPU is not the engine's
def search_results(query: str) -> str:
    """Numbered passages with urls, 500-2000 characters, always the same for a query."""
    seed = int.from_bytes(hashlib.sha256(query.encode()).digest()[:8], "big")
    rng = random.Random(seed)
    words = WORDS
    size = rng.randint(500, 2000)
    lines: list[str] = []
    while sum(len(line) + 1 for line in lines) < size:
        n = len(lines) + 1
        text = " ".join(rng.choice(words) for _ in range(rng.randint(8, 20)))
        lines.append(f"[{n}] https://example.org/{seed % 997}/{n} - {text}.")
    return "\n".join(lines)[:size]


def time_runs(runner: AgentRunner) -> None:
    """Make the runner stamp the end of each run on the clock of the session it runs."""
    run = runner.run

    async def timed(session_id: UUID, run_id: UUID, *, recovering: bool = False) -> RunEnd:
        try:
            return await run(session_id, run_id, recovering=recovering)
        finally:
            clock = _clock.get()
            if clock is not None:
                clock.ended = time.perf_counter()

    setattr(runner, "run", timed)  # noqa: B010 (the scheduler calls the instance's `run`)


@dataclass
class BenchEngine:
    sessions: SessionService
    bridge: SyncBridge
    runner: AgentRunner
    scheduler: RunScheduler
    deltas: NullDeltaSink

    async def run_session(self, text: str, **settings: object) -> tuple[UUID, StepClock, RunEnd]:
        """Start a session, send `text`, and wait for its run to end."""
        clock = StepClock()
        token = _clock.set(clock)  # the run's task copies this context when it is created
        try:
            receipt = await self.bridge(
                self.sessions.start_session,
                workspace_id=uuid4(), owner_id=uuid4(), title="bench",
                settings=SessionSettings.of(settings),
            )  # fmt: skip
            await self.scheduler.send_message(receipt.session_id, text)
        finally:
            _clock.reset(token)
        end = await self.scheduler.wait(receipt.session_id)
        assert end is not None
        return receipt.session_id, clock, end


def build_engine(
    llm: LLM,
    blobs: Path,
    *,
    sessions: SessionService | None = None,
    bridge: SyncBridge | None = None,
    settings: EngineSettings | None = None,
) -> BenchEngine:
    """The engine as bootstrap wires it, on `sessions` (default: the in-memory store),
    with a timed model, timed tools (the built-ins and a search stand-in) and timed runs."""
    config = Settings()
    deltas = NullDeltaSink()
    engine = bootstrap_engine(
        config,
        sessions=sessions,
        bridge=bridge,
        llm=TimedLLM(llm),
        tools=time_tools([*build_tools(config), PageSearch()]),
        blobs=FilesystemBlobStore(blobs),
        counter=CharRatioTokenCounter(),
        deltas=deltas,
        engine_settings=settings or EngineSettings(),
    )
    time_runs(engine.runner)
    return BenchEngine(engine.sessions, engine.bridge, engine.runner, engine.scheduler, deltas)
