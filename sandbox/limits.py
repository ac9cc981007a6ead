"""Resource limits as the kernel applies them (`prlimit` wraps the sandboxed command),
and which limit ended a run.

Limits are set inside the sandbox, on the command, not on bubblewrap: the process
count (RLIMIT_NPROC) is then counted in the run's own user namespace, so concurrent
runs do not share one budget, and the run's processes are a non-root host uid (for
root, the kernel never enforces RLIMIT_NPROC).
"""

from __future__ import annotations

import re
import signal

from schemas.sandbox import SandboxLimit, SandboxLimits

PRLIMIT = "/usr/bin/prlimit"

# bubblewrap's own process inside the PID namespace (its init) shares the run's uid.
HELPER_PROCESSES = 1


def prlimit_argv(limits: SandboxLimits, helpers: int = 0) -> tuple[str, ...]:
    """`prlimit` setting soft and hard limits, then running what follows `--`. CPU has
    a second of grace between SIGXCPU (soft) and SIGKILL (hard)."""
    cpu = max(1, int(limits.cpu_seconds))
    processes = limits.processes + HELPER_PROCESSES + helpers
    return (
        PRLIMIT,
        f"--cpu={cpu}:{cpu + 1}",
        f"--as={limits.memory_bytes}",
        f"--nproc={processes}",
        f"--fsize={limits.file_bytes}",
        f"--nofile={limits.open_files}",
        "--core=0",
        "--",
    )


def exit_code(status: int) -> int:
    """bubblewrap reports a child killed by signal N as 128 + N, as shells do; the
    port says a negative code for that."""
    if 128 < status < 128 + signal.NSIG:
        return -(status - 128)
    return status


_MEMORY = re.compile(r"MemoryError|Cannot allocate memory|std::bad_alloc|out of memory")
_FILE_SIZE = re.compile(r"File too large|No space left on device|Disk quota exceeded")
_PROCESSES = re.compile(
    r"BlockingIOError: \[Errno 11\]|fork: (retry: )?Resource temporarily unavailable"
    r"|can't start new thread"
)

_ERRORS: tuple[tuple[SandboxLimit, re.Pattern[str]], ...] = (
    ("memory", _MEMORY),
    ("file_size", _FILE_SIZE),
    ("processes", _PROCESSES),
)


def ended_by(code: int, stderr_tail: str, killed_for: SandboxLimit | None) -> SandboxLimit | None:
    """The limit that ended a run: the one it was killed for, else what its exit says
    (a signal, or the error a limit raises, at the end of stderr)."""
    if killed_for is not None:
        return killed_for
    if code == -signal.SIGXCPU:
        return "cpu_time"
    if code == -signal.SIGXFSZ:
        return "file_size"
    if code == 0:
        return None
    for limit, pattern in _ERRORS:
        if pattern.search(stderr_tail):
            return limit
    return None
