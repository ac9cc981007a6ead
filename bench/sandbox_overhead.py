"""Sandbox overhead: request to result for `print(1)` under bubblewrap, and ten runs at
once (all complete, none sees another's files).

python -m bench.sandbox_overhead [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import tempfile
import time
from pathlib import Path

from bench.harness import cores, median, percentile
from sandbox.bubblewrap import BubblewrapSandbox
from sandbox.python import python_argv
from schemas.sandbox import SandboxRun

TARGET_P50_MS = 150.0
CONCURRENT = 10
LOOK_AROUND = """
import os
mine = open("mine.txt").read()
print(mine, sorted(os.listdir(".")))
open(f"out-{mine}.txt", "w").write(mine)
"""


async def print_one(sandbox: BubblewrapSandbox, runs: int) -> list[float]:
    """Milliseconds from request to result for each of `runs` runs, after a warm-up."""
    run = SandboxRun(argv=python_argv("print(1)", sandbox.python))
    for _ in range(3):
        await sandbox.run(run)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        result = await sandbox.run(run)
        times.append((time.perf_counter() - started) * 1000)
        assert result.exit_code == 0 and result.stdout == "1\n", result
    return times


async def ten_at_once(sandbox: BubblewrapSandbox) -> tuple[float, int]:
    """Wall time of ten concurrent runs, and how many saw only their own files."""
    runs = [
        SandboxRun(
            argv=python_argv(LOOK_AROUND, sandbox.python),
            files={"mine.txt": str(i).encode(), f"only-{i}.txt": b""},
        )
        for i in range(CONCURRENT)
    ]
    started = time.perf_counter()
    results = await asyncio.gather(*(sandbox.run(r) for r in runs))
    elapsed = (time.perf_counter() - started) * 1000
    private = sum(
        r.exit_code == 0
        and r.stdout.strip() == f"{i} {sorted(['mine.txt', f'only-{i}.txt'])}"
        and dict(r.files) == {f"out-{i}.txt": str(i).encode()}
        for i, r in enumerate(results)
    )
    return elapsed, private


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    options = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="tokendance-bench-sandbox-"))
    try:
        sandbox = BubblewrapSandbox(root)
        ms = asyncio.run(print_one(sandbox, options.runs))
        elapsed, private = asyncio.run(ten_at_once(sandbox))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(f"cores: {cores()}")
    print(f"[bubblewrap] print(1) runs:               {len(ms)}")
    target = f"(target < {TARGET_P50_MS:.0f} ms)"
    print(f"[bubblewrap] request to result p50:       {median(ms):.1f} ms {target}")
    print(f"[bubblewrap] request to result p99:       {percentile(ms, 99):.1f} ms")
    print(f"[bubblewrap] {CONCURRENT} concurrent runs, wall:      {elapsed:.0f} ms")
    print(f"[bubblewrap] completed seeing only their own files: {private} of {CONCURRENT}")


if __name__ == "__main__":
    main()
