"""What a step costs at step 1000, and what a run start costs at version 50 and 5,000.

A step (turn, tool call, sources, result) written as one command per event (as the loop
did) and as the two combined commands (as it does), each against the same rows written
by one plain INSERT transaction; run start (load, fold, first request) with and without
a snapshot of the folded log. Embedded Postgres. The long session (1,512 steps) is at
the same point of its compaction cycle as the short one (12 steps), so both requests
hold the same live conversation and what differs is the log behind it; each start
prints how many events it read and how many messages its request holds.

python -m bench.step_cost
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from uuid import UUID, uuid4

import psycopg
from eventsourcing.postgres import PostgresFactory

from adapters.postgres.context_snapshots import PostgresContextSnapshots
from adapters.system import System
from application.run_state import RunState
from application.sessions import SessionService
from application.steps import CallRequest, CallsStep, ResultStep, TurnStep
from bench.harness import bench_system, cores, median
from domain.context import ContextBuilder, ContextFrame
from domain.conversation import ModelTurn, TextBlock, ToolUseBlock, Usage
from domain.values import ModelCallCost, SourceSeen
from tests.fakes.long_session import start, step

GROWN = 1000  # steps before measuring
MEASURED = 60
FRAME = ContextFrame("You are a bench.", ())


def parts(i: int, run_id: UUID) -> tuple[ModelTurn, CallRequest, SourceSeen]:
    turn = ModelTurn(
        (TextBlock(f"Step {i}: searching. " * 8), ToolUseBlock(f"s{i}", "search", {"q": i})),
        "tool_use", Usage(100, 20), "bench",
    )  # fmt: skip
    return turn, CallRequest(f"s{i}", "search", {"q": i}), SourceSeen(f"https://e.org/{i}", "P")


def one_by_one(app: SessionService, sid: UUID, run_id: UUID, i: int) -> None:
    turn, c, seen = parts(i, run_id)
    app.record_assistant_turn(sid, run_id, turn, 5)
    app.request_tool_call(sid, c.tool_use_id, c.tool, c.args)
    app.record_sources(sid, c.tool_use_id, [seen])
    n = app.get_session(sid).source_numbers[seen.url]
    app.record_tool_result(sid, c.tool_use_id, "success", f"found [{n}]", sources=[n])


def combined(app: SessionService, sid: UUID, run_id: UUID, i: int) -> None:
    turn, c, seen = parts(i, run_id)
    app.record_turn_and_calls(
        sid, TurnStep(run_id, turn, 5, ModelCallCost(), calls=CallsStep((c,)))
    )
    app.record_result_and_effects(
        sid, ResultStep(c.tool_use_id, "success", "found {{source:0}}", seen=(seen,))
    )


def plain_insert(url: str, app: SessionService, sid: UUID, versions: range) -> float:
    """Seconds to write the rows of `versions` again with one INSERT transaction."""
    rows = [
        app.mapper.to_stored_event(e)
        for e in app.session_events(sid)
        if e.originator_version in versions
    ]
    with psycopg.connect(url) as conn:
        t = time.perf_counter()
        with conn.transaction():
            conn.cursor().executemany(
                "INSERT INTO bench_plain VALUES (%s, %s, %s, %s)",
                [(uuid4(), r.originator_version, r.topic, r.state) for r in rows],
            )
        return time.perf_counter() - t


Write = Callable[[SessionService, UUID, UUID, int], object]


def step_costs(url: str, app: SessionService, write: Write) -> tuple[float, float]:
    """(median seconds of a step at step GROWN, of its rows as one plain INSERT)."""
    sid, run_id = start(app)
    for i in range(GROWN):
        step(app, sid, run_id, i, compact_every=0)
    costs, plain = [], []
    for i in range(MEASURED):
        before = app.get_session(sid).version
        t = time.perf_counter()
        write(app, sid, run_id, GROWN + i)
        costs.append(time.perf_counter() - t)
        after = app.get_session(sid).version
        plain.append(plain_insert(url, app, sid, range(before + 1, after + 1)))
    return median(costs), median(plain)


RUN_STARTS = 31  # a start at v~50 takes a few ms: enough of them that noise averages out
COMPACT_EVERY = 300  # steps
SHORT, LONG = 12, 5 * COMPACT_EVERY + 12  # steps: versions ~50 and ~5,000


@dataclass(frozen=True)
class Start:
    seconds: float  # the median
    version: int
    events_read: int
    messages: int  # in the first request


async def run_start(
    system: System, app: SessionService, steps: int, snapshots: PostgresContextSnapshots | None
) -> Start:
    c = system.container
    sid, run_id = start(app)
    for i in range(steps):
        step(app, sid, run_id, i, compact_every=COMPACT_EVERY)
    if snapshots is not None:
        keeper = RunState(sid, run_id, app, c.bridge, snapshots, 100)
        await keeper.load()
        keeper.follow(ContextBuilder(FRAME))
        turn, call, _ = parts(99999, run_id)
        await keeper.record(
            app.record_turn_and_calls,
            sid,
            TurnStep(run_id, turn, 5, ModelCallCost(), calls=CallsStep((call,))),
        )
    times = []
    for _ in range(RUN_STARTS):
        t = time.perf_counter()
        state = RunState(sid, run_id, app, c.bridge, snapshots, 100)
        await state.load()
        state.follow(ContextBuilder(FRAME))
        assert state.context is not None
        request = state.context.request()
        times.append(time.perf_counter() - t)
    return Start(median(times), state.version, len(state.log), len(request.messages))


def main() -> None:
    print(f"cores: {cores()}")
    with bench_system(projections=False) as system:
        c = system.container
        app = c.sessions
        with psycopg.connect(c.database_url, autocommit=True) as conn:
            conn.execute("CREATE TABLE bench_plain (id uuid, version int, topic text, state bytea)")
        factory = app.factory
        assert isinstance(factory, PostgresFactory)
        snapshots = PostgresContextSnapshots(factory.datastore)
        snapshots.create_table()
        for name, write in (("one command per event", one_by_one), ("combined commands", combined)):
            cost, plain = step_costs(c.database_url, app, write)
            print(f"step at {GROWN}, {name}: {cost * 1000:.2f} ms vs plain INSERT "
                  f"{plain * 1000:.2f} ms = {cost / plain:.1f}x")  # fmt: skip
        for label, store in (("full fold", None), ("snapshot + tail", snapshots)):
            short = asyncio.run(run_start(system, app, SHORT, store))
            long = asyncio.run(run_start(system, app, LONG, store))
            print(f"run start, {label}: " + ", ".join(
                f"v{s.version} {s.seconds * 1000:.1f} ms ({s.events_read} events read, "
                f"{s.messages} messages)" for s in (short, long)
            ) + f" = {long.seconds / short.seconds:.2f}x")  # fmt: skip


if __name__ == "__main__":
    main()
