"""Who owns the embedded servers of a data directory: an exclusive lock held for life.

The owner holds `fcntl.flock` on DATA/owner.lock for as long as it runs; the kernel
drops the lock however the process ends, even by SIGKILL, so a lease can never outlive
its holder. DATA/owner.json names the holder (pid, process start time, role) so that
others can say who it is. It is only meaningful while the lock is held.

Roles: `serve` and other commands own the servers while they run; `stopping` is an
owner on its way out; `watchdog` is a dead owner's watchdog stopping the servers.
A process that finds the lease held by one of the last two waits for it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

LOCK_FILE = "owner.lock"
INFO_FILE = "owner.json"
WATCHDOG = "watchdog"
STOPPING = "stopping"
TRANSIENT_ROLES = frozenset({WATCHDOG, STOPPING})


def process_start(pid: int) -> int | None:
    """When `pid` started (clock ticks since boot), or None if it is gone or a zombie.

    A pid and its start time name one process: a reused pid has another start time.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()  # the command name may hold spaces
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])  # field 22 of proc(5); fields[0] is field 3


@dataclass(frozen=True)
class Holder:
    """The process holding a lease."""

    pid: int
    started: int
    role: str

    @classmethod
    def me(cls, role: str) -> Holder:
        return cls(os.getpid(), process_start(os.getpid()) or 0, role)

    def alive(self) -> bool:
        return process_start(self.pid) == self.started

    def __str__(self) -> str:
        return f"tokendance {self.role} (pid {self.pid})"


class LeaseHeld(RuntimeError):
    """Another live process owns the embedded servers of this data directory."""

    def __init__(self, data_dir: Path, holder: Holder | None) -> None:
        who = str(holder) if holder else "another process"
        super().__init__(
            f"the embedded servers in {data_dir} are owned by {who}; "
            "stop it first or use another --data-dir"
        )
        self.holder = holder


class OwnerLease:
    """The ownership lease of `data_dir`, taken as `role`."""

    def __init__(self, data_dir: Path, role: str) -> None:
        self.data_dir = data_dir
        self.role = role
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def try_acquire(self) -> bool:
        """Take the lease if nobody holds it; never waits."""
        if self._fd is not None:
            return True
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # os.open is close-on-exec: the servers we start never inherit (and keep) the lock.
        fd = os.open(self.data_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._fd = fd
        self.announce(self.role)
        return True

    def acquire(self, timeout: float) -> Holder | None:
        """Take the lease, waiting while its holder is on its way out (a dead owner not
        yet gone, an owner stopping, a watchdog stopping the servers).

        Returns None once held, or the live owner that holds it. Raises `LeaseHeld`
        when a departing holder has not let go within `timeout` seconds.
        """
        deadline = time.monotonic() + timeout
        while not self.try_acquire():
            holder = self.holder()
            if holder is not None and holder.alive() and holder.role not in TRANSIENT_ROLES:
                return holder
            if time.monotonic() > deadline:
                raise LeaseHeld(self.data_dir, holder)
            time.sleep(0.05)
        return None

    def announce(self, role: str) -> None:
        """Say who holds the lease, as `role` (written whole: readers never see half)."""
        self.role = role
        tmp = self.data_dir / f"{INFO_FILE}.{os.getpid()}"
        tmp.write_text(json.dumps(asdict(Holder.me(role))))
        tmp.replace(self.data_dir / INFO_FILE)

    def holder(self) -> Holder | None:
        """Who the info file names (meaningful while the lock is held)."""
        try:
            info = json.loads((self.data_dir / INFO_FILE).read_text())
            return Holder(int(info["pid"]), int(info["started"]), str(info["role"]))
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def release(self) -> None:
        if self._fd is None:
            return
        with contextlib.suppress(OSError):
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None
