"""Append cost per step over a long session, bytes stored per step, events per second.

python -m bench.append_cost
"""

from __future__ import annotations

import time
from uuid import uuid4

import psycopg

from bench.harness import bench_system, cores, median

STEPS = 1000
MESSAGE = ("The quick brown fox jumps over the lazy dog. " * 23)[:1000]  # ~1 KB


def stored_bytes(database_url: str) -> int:
    with psycopg.connect(database_url) as conn:
        row = conn.execute(
            "SELECT pg_total_relation_size('tokendance_events') "
            "+ pg_total_relation_size('tokendance_snapshots')"
        ).fetchone()
    assert row is not None
    return int(row[0])


def main() -> None:
    with bench_system() as system:
        c = system.container
        app = c.sessions
        sid = app.start_session(workspace_id=uuid4(), owner_id=uuid4(), title="bench").session_id
        for _ in range(20):  # warm the connection pool and prepared statements
            app.append_user_message(uuid_session := sid, MESSAGE)  # noqa: F841
        before = stored_bytes(c.database_url)
        sid = app.start_session(workspace_id=uuid4(), owner_id=uuid4(), title="bench").session_id
        costs = []
        for _ in range(STEPS):
            t = time.perf_counter()
            app.append_user_message(sid, MESSAGE)
            costs.append(time.perf_counter() - t)
        after = stored_bytes(c.database_url)
        first, last = median(costs[:10]), median(costs[-10:])
        print(f"cores: {cores()}")
        print(f"append, steps 1-10 median:      {first * 1000:.2f} ms")
        print(f"append, steps 991-1000 median:  {last * 1000:.2f} ms")
        print(f"ratio late/early:               {last / first:.2f} (target <= 1.2)")
        print(f"bytes stored per step:          {(after - before) / STEPS:.0f} B (target <= 2048)")

        n = 2000
        t = time.perf_counter()
        for _ in range(n):
            app.append_user_message(sid, "x")
        one = n / (time.perf_counter() - t)
        print(f"events/s, 1 event per transaction:    {one:,.0f}")

        batches = 50
        t = time.perf_counter()
        for _ in range(batches):
            session = app.get_session(sid)
            for _ in range(100):
                session.append_user_message("x")
            app.save(session)
        hundred = batches * 100 / (time.perf_counter() - t)
        print(f"events/s, 100 events per transaction: {hundred:,.0f}")


if __name__ == "__main__":
    main()
