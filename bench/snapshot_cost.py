"""What context snapshots cost as a session grows: bytes stored and written per step, and
a cold run start's store reads at step 50 and at step 1,000 (compaction off).

Each step is a user message, a model turn with one tool call, and its result (~1 KB of
text each), written through a run's `RunState` as the engine writes them (its combined
commands, a snapshot kept every 100 events). Against the same rows written with one
plain INSERT each into a bare table. "Rewritten whole" is what the same snapshots would
have written as one row per session replaced each time (every segment again).

python -m bench.snapshot_cost [--steps 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Collection
from uuid import UUID, uuid4

import psycopg
from eventsourcing.postgres import PostgresFactory

from adapters.postgres.context_snapshots import SEGMENTS, TABLE, PostgresContextSnapshots
from adapters.system import System
from application import context_snapshots
from application.context_snapshots import SegmentCache
from application.run_state import RunState
from application.snapshot_port import KeptSnapshot, SnapshotWrite
from application.steps import CallRequest, CallsStep, ResultStep, TurnStep
from bench.harness import bench_system, cores, median
from domain.context import ContextBuilder, ContextFrame
from domain.conversation import ModelTurn, TextBlock, ToolUseBlock, Usage
from domain.values import ModelCallCost

TEXT = ("The quick brown fox jumps over the lazy dog. " * 23)[:1000]  # ~1 KB
FRAME = ContextFrame("You are a bench.", ())
STARTS = 21


class Counting:
    """The Postgres store, counting what each snapshot writes."""

    def __init__(self, inner: PostgresContextSnapshots) -> None:
        self.inner = inner
        self.written = 0  # bytes, head and segment
        self.whole = 0  # bytes, had each snapshot been one row rewritten whole
        self.segments = 0  # bytes of the segments so far

    def latest(self, session_id: UUID, have: Collection[int] = ()) -> KeptSnapshot | None:
        return self.inner.latest(session_id, have)

    def keep(self, session_id: UUID, snapshot: SnapshotWrite) -> None:
        segment = len(snapshot.segment.data) if snapshot.segment else 0
        self.segments += segment
        self.written += len(snapshot.head) + segment
        self.whole += len(snapshot.head) + self.segments
        self.inner.keep(session_id, snapshot)


def table_bytes(url: str, *tables: str) -> int:
    with psycopg.connect(url) as conn:
        total = 0
        for table in tables:
            row = conn.execute("SELECT pg_total_relation_size(%s)", (table,)).fetchone()
            total += int(row[0]) if row else 0
        return total


async def grow(system: System, store: Counting, steps: int) -> tuple[UUID, list[int]]:
    """A session of `steps` steps; the version after each."""
    app, bridge = system.container.sessions, system.container.bridge
    sid = app.start_session(workspace_id=uuid4(), owner_id=uuid4(), title="bench").session_id
    run_id = uuid4()
    app.submit_message(sid, TEXT, run_id)
    app.start_run(sid, run_id, "bench")
    state = RunState(sid, run_id, app, bridge, store, 100)
    await state.load()
    state.follow(ContextBuilder(FRAME))
    versions = []
    for i in range(steps):
        if i:
            await state.record(app.append_user_message, sid, f"{i}: {TEXT}")
        use = f"s{i}"
        turn = ModelTurn(
            (TextBlock(TEXT), ToolUseBlock(use, "search", {"q": i})), "tool_use", Usage(1, 1), "b"
        )
        calls = CallsStep((CallRequest(use, "search", {"q": i}),))
        step = TurnStep(run_id, turn, 5, ModelCallCost(), calls=calls)
        await state.record(app.record_turn_and_calls, sid, step)
        result = ResultStep(use, "success", TEXT)
        await state.record(app.record_result_and_effects, sid, result)
        versions.append(state.version)
    return sid, versions


def plain_bytes(system: System, sid: UUID) -> int:
    """The session's rows written again, one INSERT each, into a bare table: its size."""
    app, url = system.container.sessions, system.container.database_url
    rows = [app.mapper.to_stored_event(e) for e in app.session_events(sid)]
    with psycopg.connect(url) as conn:
        conn.execute("CREATE TABLE bench_bare (id uuid, version int, topic text, state bytea)")
        for r in rows:
            conn.execute(
                "INSERT INTO bench_bare VALUES (%s, %s, %s, %s)",
                (r.originator_id, r.originator_version, r.topic, r.state),
            )
        conn.commit()
    return table_bytes(url, "bench_bare")


def start_reads(
    system: System, store: PostgresContextSnapshots, sid: UUID, cache: SegmentCache | None
) -> float:
    """Median seconds of a run start's store reads (head, segments, tail, decoded): with
    no segment held (a process new to the session), or those `cache` holds."""
    app = system.container.sessions
    times = []
    for _ in range(STARTS):
        held = cache if cache is not None else SegmentCache()
        t = time.perf_counter()
        folded = context_snapshots.read(store, sid, app.mapper, held)
        list(app.session_events(sid, after=folded.version if folded else 0))
        times.append(time.perf_counter() - t)
    return median(times)


def bytes_only(url: str, sid: UUID) -> float:
    """Median seconds of fetching the session's head and segments as bytes, nothing
    decoded: the floor of a cold start, which must have the whole conversation."""
    query = (
        f"SELECT h.data, s.data FROM {TABLE} h LEFT JOIN {SEGMENTS} s "
        "ON s.session_id = h.session_id AND s.epoch = h.epoch WHERE h.session_id = %s"
    )
    times = []
    with psycopg.connect(url) as conn:
        for _ in range(STARTS):
            t = time.perf_counter()
            rows = conn.execute(query, (sid,), binary=True).fetchall()
            times.append(time.perf_counter() - t)
            assert rows
    return median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    steps = parser.parse_args().steps
    print(f"cores: {cores()}, {steps} steps of a user message, a turn with a call, a result")
    with bench_system(projections=False) as system:
        url = system.container.database_url
        factory = system.container.sessions.factory
        assert isinstance(factory, PostgresFactory)
        inner = PostgresContextSnapshots(factory.datastore)
        inner.create_table()
        tables = ("tokendance_events", TABLE, SEGMENTS)
        before = table_bytes(url, *tables)
        store = Counting(inner)
        sid, versions = asyncio.run(grow(system, store, steps))
        stored = table_bytes(url, *tables) - before
        bare = plain_bytes(system, sid)
        print(f"stored per step: {stored / steps / 1024:.2f} KiB (events and snapshots) vs "
              f"{bare / steps / 1024:.2f} KiB bare rows = {stored / bare:.2f}x")  # fmt: skip
        print(f"snapshot bytes written per step: {store.written / steps / 1024:.2f} KiB "
              f"(rewritten whole: {store.whole / steps / 1024:.2f} KiB, "
              f"{store.whole / max(store.written, 1):.1f}x)")  # fmt: skip
        short_sid, short_versions = asyncio.run(grow(system, Counting(inner), 50))
        for label, cache in (("cold", None), ("segments held", SegmentCache())):
            short = start_reads(system, inner, short_sid, cache)
            long = start_reads(system, inner, sid, cache)
            print(f"run start, store reads, {label}: v{short_versions[-1]} "
                  f"{short * 1000:.2f} ms, v{versions[-1]} {long * 1000:.2f} ms "
                  f"= {long / short:.1f}x")  # fmt: skip
        short, long = bytes_only(url, short_sid), bytes_only(url, sid)
        print(f"the snapshot's bytes alone, nothing decoded (a cold start's floor): "
              f"{short * 1000:.2f} ms, {long * 1000:.2f} ms = {long / short:.1f}x")  # fmt: skip


if __name__ == "__main__":
    main()
