"""The sandbox's run memory accounting: a process tree read from /proc (real child
processes), the watchdog over it, and where a run's cgroup would go."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox.memory import (
    CgroupMemory,
    MemoryWatchdog,
    cgroup_candidates,
    process_bytes,
    process_tree,
    tree_bytes,
)

pytestmark = pytest.mark.timeout(60)

MiB = 1024 * 1024

# A parent that forks one child; each reads its own order from stdin (5 bytes, no
# buffering), writes `mib` MiB if told to grow, says "held" and waits to be killed.
HOLDER = """
import os, sys, time
mib = int(sys.argv[1])
pid = os.fork()
hog = None
if os.read(0, 5) == b"grow\\n":
    hog = bytearray(mib * 1024 * 1024)
    for page in range(0, len(hog), 4096):
        hog[page] = 1
os.write(1, f"held {os.getpid()}\\n".encode())
time.sleep(600)
"""


class Holder:
    def __init__(self, mib: int) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLDER, str(mib)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.pid = self.proc.pid

    def grow(self, grow: bool = True) -> set[int]:
        """Both processes write their memory (or not); the pids that said so."""
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(("grow\n" if grow else "stay\n") * 2)
        self.proc.stdin.flush()
        return {int(self.proc.stdout.readline().split()[1]) for _ in range(2)}

    def end(self) -> None:
        os.killpg(self.pid, signal.SIGKILL)
        self.proc.wait()


@pytest.fixture
def holder() -> Iterator[Holder]:
    made = Holder(64)
    yield made
    made.end()


def test_the_tree_holds_the_process_and_its_children(holder: Holder) -> None:
    pids = holder.grow(False)
    assert holder.pid in pids
    assert process_tree(holder.pid) == pids
    (child,) = pids - {holder.pid}
    assert process_tree(child) == {child}


def test_the_tree_of_a_gone_process_is_empty() -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert process_tree(gone.pid) == set()
    assert tree_bytes(gone.pid) == 0


def test_the_tree_counts_what_every_process_wrote(holder: Holder) -> None:
    before = tree_bytes(holder.pid)
    pids = holder.grow()
    after = tree_bytes(holder.pid)
    # Two processes wrote 64 MiB each: counted once each, not less.
    assert after - before >= 2 * 60 * MiB
    assert after >= sum(process_bytes(pid) for pid in pids) - 4 * MiB
    assert all(process_bytes(pid) >= 60 * MiB for pid in pids)


def test_shared_pages_are_not_counted_twice() -> None:
    """A child forked after its parent wrote 64 MiB shares those pages: the tree's sum
    (proportional shares) stays near 64 MiB, not twice that."""
    code = """
import os, sys
hog = bytearray(64 * 1024 * 1024)
for page in range(0, len(hog), 4096):
    hog[page] = 1
pid = os.fork()
os.write(1, b"forked\\n")
sys.stdin.read()
if pid:
    os.waitpid(pid, 0)
"""
    proc = subprocess.Popen(
        [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout and proc.stdin
    try:
        assert [proc.stdout.readline() for _ in range(2)] == ["forked\n"] * 2
        if not Path(f"/proc/{proc.pid}/smaps_rollup").exists():
            pytest.skip("no smaps_rollup here: resident sizes are summed")
        assert 60 * MiB <= tree_bytes(proc.pid) < 100 * MiB
    finally:
        proc.stdin.close()
        proc.wait()


async def test_the_watchdog_sees_a_tree_reach_its_limit(holder: Holder) -> None:
    async with MemoryWatchdog(interval=0.01).limit(100 * MiB) as guard:
        assert guard.wrap(["true"]) == ["true"]
        reached = asyncio.create_task(guard.reached(holder.pid))
        await asyncio.to_thread(holder.grow)
        await asyncio.wait_for(reached, 30)
        assert guard.tripped


async def test_the_watchdog_leaves_a_tree_under_its_limit(holder: Holder) -> None:
    async with MemoryWatchdog(interval=0.01).limit(256 * MiB) as guard:
        reached = asyncio.create_task(guard.reached(holder.pid))
        await asyncio.to_thread(holder.grow)
        done, _ = await asyncio.wait({reached}, timeout=0.3)  # some 30 polls
        reached.cancel()
        assert not done
        assert not guard.tripped


MOUNTINFO = """\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
CGROUPS = "4:memory:/jobs/a1\n1:cpu:/\n0::/jobs/a1\n"


def test_cgroup_candidates_v2_first_then_v1() -> None:
    assert cgroup_candidates(CGROUPS, MOUNTINFO) == [
        (2, Path("/sys/fs/cgroup/unified/jobs/a1")),
        (1, Path("/sys/fs/cgroup/memory/jobs/a1")),
    ]


def test_cgroup_candidates_under_a_mount_of_a_subtree() -> None:
    """In a container the mount's root is its own cgroup: paths are relative to it."""
    mounts = "50 40 0:30 /jobs /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
    assert cgroup_candidates("0::/jobs/a1\n", mounts) == [(2, Path("/sys/fs/cgroup/a1"))]


def test_no_cgroup_candidates_without_a_memory_mount() -> None:
    mounts = "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    assert cgroup_candidates("1:cpu:/\n", mounts) == []


def test_a_cgroup_mechanism_says_where_and_which() -> None:
    memory = CgroupMemory(Path("/sys/fs/cgroup/memory/jobs/a1"), 1)
    assert memory.describe() == (
        "cgroup v1 memory.limit_in_bytes per run (under /sys/fs/cgroup/memory/jobs/a1)"
    )
    assert "watchdog" in MemoryWatchdog().describe()
