"""A process's first load of a large memory namespace: from its events, and from its
snapshot; and what writing that snapshot costs the `remember` that crosses its interval.

A namespace of N memories (each learned from its own session event, as the agent's
findings are) is saved in one transaction on embedded Postgres, then loaded as a new
process would (nothing cached, garbage collected first), three times each way. The
snapshot is written as `Memories` writes it: from the namespace in hand.

python -m bench.memory_load [--memories 10000]
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from datetime import UTC, datetime
from uuid import uuid4

from application.accounts import AccountService
from application.memories import SNAPSHOT_INTERVAL
from bench.harness import bench_system, cores, median
from domain.authors import ByUser
from domain.memories import MemoryNamespace
from domain.memory_values import MemorySource, Namespace


def timed(action: Callable[[], object]) -> float:
    gc.collect()
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--memories", type=int, default=10_000)
    n = parser.parse_args().memories
    print(f"cores: {cores()}; a namespace of {n:,} memories; snapshots every {SNAPSHOT_INTERVAL}")
    with bench_system(projections=False) as system:
        accounts: AccountService = system.container.accounts
        assert accounts.snapshots is not None
        namespace = MemoryNamespace.create(Namespace("user", uuid4()), None)
        now, by = datetime.now(UTC), ByUser(uuid4())
        for i in range(n):
            text = f"finding {i} on topic {i % 97}: what the agent learned from a source"
            namespace.remember(text, "knowledge", MemorySource(uuid4(), 7), None, by, now)
        accounts.save(namespace)
        version = namespace.version

        def load() -> None:
            loaded: MemoryNamespace = accounts.repository.get(namespace.id, version=version)
            assert len(loaded.memories) == n

        from_events = [timed(load) for _ in range(3)]  # with a version: never from the cache
        snapshots = accounts.snapshots
        written = timed(lambda: snapshots.put([MemoryNamespace.Snapshot.take(namespace)]))
        from_snapshot = [timed(load) for _ in range(3)]
    print(f"first load from {version:,} events: median {median(from_events):.3f} s "
          f"({', '.join(f'{t:.3f}' for t in from_events)})")  # fmt: skip
    print(f"first load from its snapshot: median {median(from_snapshot):.3f} s "
          f"({', '.join(f'{t:.3f}' for t in from_snapshot)}), "
          f"{median(from_events) / median(from_snapshot):.1f}x faster")  # fmt: skip
    print(f"writing the snapshot: {written:.3f} s, once every {SNAPSHOT_INTERVAL} events "
          f"({written / SNAPSHOT_INTERVAL * 1000:.2f} ms an event)")  # fmt: skip


if __name__ == "__main__":
    main()
