"""One memory limit for a whole run, all of its processes together.

`prlimit --as` (sandbox/limits.py) bounds each process's address space, so a run that
forks could hold its process limit times its memory limit; it stays as a backstop. On
top of it, the run as a whole gets one of:

- a cgroup of its own (`CgroupMemory`): cgroup v2 `memory.max` (with `memory.oom.group`,
  so the kernel kills the whole run) or cgroup v1 `memory.limit_in_bytes`, made under
  the server's own cgroup where the server may write there (root, or a delegated
  cgroup). The kernel holds the run to the limit; once it kills for memory, the runner
  ends the rest of the run and names the memory limit.
- else a watchdog (`MemoryWatchdog`): every 50 ms (10 ms once past 3/4 of the limit)
  it sums the memory of every process in the run's tree (proportional set size from
  /proc/<pid>/smaps_rollup, so pages shared after a fork count once; the resident size
  where that cannot be read), and ends the run when the sum reaches the limit. A run
  can pass the limit by what it allocates between two polls.

`detect()` says which applies on this machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import secrets
import signal
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Literal, Protocol

POLL_SECONDS = 0.05
NEAR_POLL_SECONDS = 0.01  # the watchdog's poll once a run holds 3/4 of its limit
RUN_PREFIX = "tokendance-run-"
# Moves itself (then, by exec, bubblewrap and all it starts) into the run's cgroup.
_ENTER = 'echo $$ > "$0" && exec "$@"'


class MemoryGuard(Protocol):
    """The memory limit of one run."""

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """The run's command, started inside the limit."""
        ...

    async def reached(self, pid: int) -> None:
        """Return once the run (the process `pid` and all it started) reached the limit."""
        ...

    @property
    def tripped(self) -> bool:
        """Whether the limit was reached (checked once the run has ended, too)."""
        ...


class RunMemory(Protocol):
    """How this machine holds a run to one memory limit."""

    def describe(self) -> str: ...

    def limit(self, memory_bytes: int) -> contextlib.AbstractAsyncContextManager[MemoryGuard]:
        """A run's limit, for as long as the run lasts (its cgroup removed after)."""
        ...


# --- accounting from /proc ---------------------------------------------------------


def _parents() -> dict[int, int]:
    parents: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read()
        except OSError:  # gone meanwhile
            continue
        fields = stat.rsplit(b")", 1)[-1].split()  # the name may hold spaces and ')'
        if len(fields) > 1:
            parents[int(entry.name)] = int(fields[1])
    return parents


def process_tree(root: int) -> set[int]:
    """`root` and every process it started (that is still its descendant), as /proc
    has them now; empty when `root` is gone. In the sandbox an orphan goes to the PID
    namespace's init, which is in the tree: nothing of a run leaves it."""
    parents = _parents()
    if root not in parents:
        return set()
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    tree, todo = {root}, [root]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in tree:
                tree.add(child)
                todo.append(child)
    return tree


def _kib_field(path: str, key: bytes) -> int | None:
    try:
        with open(path, "rb") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def process_bytes(pid: int) -> int:
    """The memory `pid` holds: its proportional set size (shared pages split among the
    processes sharing them), else its resident size; 0 when gone."""
    pss = _kib_field(f"/proc/{pid}/smaps_rollup", b"Pss:")
    if pss is not None:
        return pss
    return _kib_field(f"/proc/{pid}/status", b"VmRSS:") or 0


def tree_bytes(root: int) -> int:
    """The memory `root` and all it started hold together."""
    return sum(process_bytes(pid) for pid in process_tree(root))


class _WatchedRun:
    def __init__(self, memory_bytes: int, interval: float) -> None:
        self.memory_bytes, self.interval = memory_bytes, interval
        self.tripped = False

    def wrap(self, argv: Sequence[str]) -> list[str]:
        return list(argv)

    async def reached(self, pid: int) -> None:
        while True:
            held = await asyncio.to_thread(tree_bytes, pid)
            if held >= self.memory_bytes:
                self.tripped = True
                return
            near = held * 4 >= self.memory_bytes * 3
            await asyncio.sleep(min(self.interval, NEAR_POLL_SECONDS) if near else self.interval)


class MemoryWatchdog:
    """Sums the run's processes' memory every `interval` seconds; the runner ends the
    run once the sum reaches the limit."""

    def __init__(self, interval: float = POLL_SECONDS) -> None:
        self.interval = interval

    def describe(self) -> str:
        return (
            f"watchdog summing the run's processes' memory every {self.interval * 1000:g} ms "
            "(no writable cgroup memory controller)"
        )

    @contextlib.asynccontextmanager
    async def limit(self, memory_bytes: int) -> AsyncIterator[MemoryGuard]:
        yield _WatchedRun(memory_bytes, self.interval)


# --- a cgroup per run ----------------------------------------------------------------


CgroupVersion = Literal[1, 2]


def cgroup_candidates(proc_cgroup: str, mountinfo: str) -> list[tuple[CgroupVersion, Path]]:
    """Where this process's memory cgroup is mounted: v2 (unified) first, then v1's
    memory hierarchy. `proc_cgroup`, `mountinfo`: /proc/self/cgroup and
    /proc/self/mountinfo."""
    own: dict[CgroupVersion, str] = {}
    for line in proc_cgroup.splitlines():
        number, controllers, path = [*line.split(":", 2), "", ""][:3]
        if number == "0" and controllers == "":
            own[2] = path
        elif "memory" in controllers.split(","):
            own[1] = path
    mounts: dict[CgroupVersion, tuple[str, str]] = {}
    for line in mountinfo.splitlines():
        fields = line.split()
        if " - " not in line or len(fields) < 5:
            continue
        after = line.split(" - ", 1)[1].split()
        fstype, options = after[0], after[2] if len(after) > 2 else ""
        root, point = fields[3], fields[4]
        if fstype == "cgroup2":
            mounts.setdefault(2, (root, point))
        elif fstype == "cgroup" and "memory" in options.split(","):
            mounts.setdefault(1, (root, point))
    found: list[tuple[CgroupVersion, Path]] = []
    for version in (2, 1):
        if version in own and version in mounts:
            root, point = mounts[version]
            relative = os.path.relpath(own[version], root)
            if relative.startswith(".."):  # our cgroup is not under that mount
                continue
            found.append((version, Path(os.path.normpath(os.path.join(point, relative)))))
    return found


class _CgroupRun:
    def __init__(self, directory: Path, version: CgroupVersion, interval: float) -> None:
        self.directory, self.version, self.interval = directory, version, interval

    def wrap(self, argv: Sequence[str]) -> list[str]:
        return ["/bin/sh", "-c", _ENTER, str(self.directory / "cgroup.procs"), *argv]

    async def reached(self, pid: int) -> None:
        while not self.tripped:
            await asyncio.sleep(self.interval)

    @property
    def tripped(self) -> bool:
        """Whether the kernel killed in this cgroup for memory."""
        name, key = ("memory.events", "oom_kill") if self.version == 2 else (
            "memory.oom_control", "oom_kill"
        )  # fmt: skip
        try:
            text = (self.directory / name).read_text()
        except OSError:
            return False
        for line in text.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == key:
                return int(parts[1]) > 0
        return False


class CgroupMemory:
    """A cgroup per run under `directory` (the server's own cgroup), its memory limit
    the run's."""

    def __init__(self, directory: Path, version: CgroupVersion, interval: float = POLL_SECONDS):
        self.directory, self.version, self.interval = directory, version, interval

    def describe(self) -> str:
        knob = "memory.max" if self.version == 2 else "memory.limit_in_bytes"
        return f"cgroup v{self.version} {knob} per run (under {self.directory})"

    def create(self, memory_bytes: int) -> Path:
        """A new cgroup holding `memory_bytes`, swap included."""
        path = self.directory / f"{RUN_PREFIX}{os.getpid()}-{secrets.token_hex(6)}"
        path.mkdir()
        try:
            if self.version == 2:
                (path / "memory.max").write_text(str(memory_bytes))
                for name, value in (("memory.swap.max", "0"), ("memory.oom.group", "1")):
                    with contextlib.suppress(OSError):
                        (path / name).write_text(value)
            else:
                (path / "memory.limit_in_bytes").write_text(str(memory_bytes))
                with contextlib.suppress(OSError):  # no swap accounting: no swap limit
                    (path / "memory.memsw.limit_in_bytes").write_text(str(memory_bytes))
        except BaseException:
            remove_cgroup(path)
            raise
        return path

    @contextlib.asynccontextmanager
    async def limit(self, memory_bytes: int) -> AsyncIterator[MemoryGuard]:
        path = await asyncio.to_thread(self.create, memory_bytes)
        try:
            yield _CgroupRun(path, self.version, self.interval)
        finally:
            await asyncio.to_thread(remove_cgroup, path)


def remove_cgroup(path: Path, attempts: int = 50) -> None:
    """Kill whatever is still in the cgroup, then remove it (a cgroup goes only once
    empty, a moment after its last process died)."""
    for _ in range(attempts):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            with contextlib.suppress(OSError):
                for pid in (path / "cgroup.procs").read_text().split():
                    with contextlib.suppress(OSError):
                        os.kill(int(pid), signal.SIGKILL)
            time.sleep(0.02)
    path.rmdir()


def _usable(version: CgroupVersion, directory: Path) -> bool:
    """Whether a run's cgroup with a memory limit can be made under `directory`."""
    if version == 2:
        try:
            enabled = (directory / "cgroup.subtree_control").read_text().split()
        except OSError:
            return False
        if "memory" not in enabled:
            try:  # refused (busy) when this cgroup holds processes and is not the root
                (directory / "cgroup.subtree_control").write_text("+memory")
            except OSError:
                return False
    try:
        probe = CgroupMemory(directory, version).create(64 * 1024 * 1024)
    except OSError:
        return False
    knob = "memory.max" if version == 2 else "memory.limit_in_bytes"
    ok = (probe / knob).exists() and (probe / "cgroup.procs").exists()
    remove_cgroup(probe)
    return ok


def detect(
    proc_cgroup: str = "/proc/self/cgroup", mountinfo: str = "/proc/self/mountinfo"
) -> RunMemory:
    """The run memory limit this machine offers: a cgroup (v2, else v1's memory
    controller) this process may create children in, else the watchdog."""
    try:
        own, mounts = Path(proc_cgroup).read_text(), Path(mountinfo).read_text()
    except OSError:
        return MemoryWatchdog()
    for version, directory in cgroup_candidates(own, mounts):
        if directory.is_dir() and _usable(version, directory):
            return CgroupMemory(directory, version)
    return MemoryWatchdog()
