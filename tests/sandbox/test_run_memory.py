"""One memory limit for the whole run: forked children share it, and reaching it ends
the run naming the memory limit (a cgroup where this machine offers one, else the
watchdog over the run's processes).

A sampler polls, from the test's side, the memory of every process started under this
test (PSS, else RSS), so a run that took more than its limit is seen whichever mechanism
held it."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from application.tools.code_execute import limit_reached
from sandbox.bubblewrap import BubblewrapSandbox
from sandbox.memory import CgroupMemory, MemoryWatchdog, RunMemory, detect
from tests.sandbox.conftest import LIMITS, WORK_BYTES, needs_bwrap, private_uids, run_python

pytestmark = needs_bwrap

MiB = 1024 * 1024
LIMIT = 256 * MiB
MARGIN = 64 * MiB  # what the sampler may see past the limit (25% of it)


def forking(children: int, mib: int, step_mib: int = 0, pause: float = 0.0) -> str:
    """Code forking `children` that each map `mib` MiB and write it page by page
    (`step_mib` at a time with `pause` seconds between steps, or all at once), then
    sleep; the parent waits for them and prints how they ended. (An anonymous map, not
    a bytearray: that one is zeroed, all written, as it is made.)"""
    return f"""
import mmap, os, time
kids = []
for _ in range({children}):
    pid = os.fork()
    if pid == 0:
        hog = mmap.mmap(-1, {mib} * 1024 * 1024)
        step = ({step_mib} or {mib}) * 1024 * 1024
        for start in range(0, len(hog), step):
            for page in range(start, min(start + step, len(hog)), 4096):
                hog[page] = 1
            time.sleep({pause})
        time.sleep(float(os.environ.get("HOLD", "60")))
        os._exit(0)
    kids.append(pid)
print("ended", [os.waitpid(kid, 0)[1] for kid in kids])
"""


def _tree() -> dict[int, list[int]]:
    """Each process's children, as /proc says now."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as f:
                    ppid = int(f.read().rsplit(b")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    return children


def _below(children: dict[int, list[int]], root: int) -> set[int]:
    found: set[int] = set()
    todo = [root]
    while todo:
        for pid in children.get(todo.pop(), ()):
            if pid not in found:
                found.add(pid)
                todo.append(pid)
    return found


def _descendants() -> set[int]:
    return _below(_tree(), os.getpid())


def _command(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def _memory_of(pid: int) -> int:
    for path, key in ((f"/proc/{pid}/smaps_rollup", "Pss:"), (f"/proc/{pid}/status", "VmRSS:")):
        try:
            with open(path) as f:
                for line in f:
                    if line.startswith(key):
                        return int(line.split()[1]) * 1024
        except OSError:
            continue
    return 0


RUNS = {"sh", "bwrap"}  # a run's process: sandbox/memory.py's wrapper, then bwrap


class PeakSampler:
    """The most memory the processes started under this test held together, polled (not
    those already there: a session's Postgres and NATS are this process's children too)."""

    def __init__(self) -> None:
        self.peak = 0
        self._before = _descendants()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            tree = _tree()
            # Only the runs' trees (`sh -c '... exec bwrap ...'`): not whatever else this
            # process started meanwhile (a browser's renderer, a database backend).
            runs = [
                pid
                for pid in tree.get(os.getpid(), ())
                if pid not in self._before and _command(pid) in RUNS
            ]
            total = sum(_memory_of(p) for run in runs for p in {run, *_below(tree, run)})
            self.peak = max(self.peak, total)
            self._stop.wait(0.01)

    def __enter__(self) -> PeakSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@pytest.fixture
def detected() -> RunMemory:
    return detect()


def _sandbox(root: Path, memory: RunMemory) -> BubblewrapSandbox:
    return BubblewrapSandbox(root, work_bytes=WORK_BYTES, uids=private_uids(), memory=memory)


@pytest.fixture
def leftover_cgroups(detected: RunMemory) -> Iterator[None]:
    """No run's cgroup is left behind."""
    before = _run_cgroups(detected)
    yield
    assert _run_cgroups(detected) <= before


def _run_cgroups(memory: RunMemory) -> set[str]:
    if not isinstance(memory, CgroupMemory):
        return set()
    return {p.name for p in memory.directory.iterdir() if p.name.startswith("tokendance-run-")}


async def test_forked_children_stop_at_the_run_memory_limit(
    sandbox_root: Path, detected: RunMemory, leftover_cgroups: None
) -> None:
    if not isinstance(detected, CgroupMemory):
        pytest.skip(f"no cgroup memory limit here ({detected.describe()}): the watchdog test")
    sandbox = _sandbox(sandbox_root, detected)
    with PeakSampler() as sampler:
        result = await run_python(sandbox, forking(6, 200), memory_bytes=LIMIT)
    assert result.limit == "memory", (result.exit_code, result.stdout, result.stderr)
    assert "ended" not in result.stdout  # the whole run was stopped, not one child
    assert 64 * MiB < sampler.peak <= LIMIT + MARGIN, sampler.peak
    said = limit_reached(result.limit, LIMITS, "")
    assert said.code == "LIMIT_REACHED"
    assert "the memory limit" in str(said)


async def test_the_watchdog_stops_forked_children_at_the_run_limit(sandbox_root: Path) -> None:
    """Without a cgroup: the watchdog sums the run's processes every 50 ms (10 ms near
    the limit), so children growing a few MiB at a time are stopped close to it."""
    sandbox = _sandbox(sandbox_root, MemoryWatchdog())
    code = forking(6, 200, step_mib=2, pause=0.02)
    with PeakSampler() as sampler:
        result = await run_python(sandbox, code, memory_bytes=LIMIT, wall_seconds=30)
    assert result.limit == "memory", (result.exit_code, result.stdout, result.stderr)
    assert "ended" not in result.stdout
    assert 64 * MiB < sampler.peak <= LIMIT + MARGIN, sampler.peak


@pytest.mark.parametrize("mechanism", ["detected", "watchdog"])
async def test_children_under_the_run_limit_are_not_killed(
    sandbox_root: Path, detected: RunMemory, mechanism: str, leftover_cgroups: None
) -> None:
    memory = detected if mechanism == "detected" else MemoryWatchdog()
    sandbox = _sandbox(sandbox_root, memory)
    code = "import os\nos.environ['HOLD'] = '0.5'\n" + forking(4, 32)
    result = await run_python(sandbox, code, memory_bytes=LIMIT)
    assert (result.exit_code, result.limit) == (0, None), result.stderr
    assert result.stdout == "ended [0, 0, 0, 0]\n"


async def test_the_default_sandbox_detects_its_mechanism(sandbox: BubblewrapSandbox) -> None:
    sandbox.check()
    assert sandbox.memory.describe() == detect().describe()
