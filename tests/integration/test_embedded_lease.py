"""The ownership lease of a data directory: one holder, named, released by death."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from adapters.processes.lease import STOPPING, WATCHDOG, LeaseHeld, OwnerLease
from adapters.processes.watchdog import take_over

pytestmark = pytest.mark.integration

HOLD = """
import sys, time
from pathlib import Path
from adapters.processes.lease import OwnerLease
assert OwnerLease(Path(sys.argv[1]), "serve").try_acquire()
print("held", flush=True)
time.sleep(600)
"""


def holding(data_dir: Path) -> subprocess.Popen[str]:
    process = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(data_dir)], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None and process.stdout.readline().strip() == "held"
    return process


def test_a_live_holder_is_named_and_kept(tmp_path: Path) -> None:
    owner = holding(tmp_path)
    try:
        lease = OwnerLease(tmp_path, "serve")
        holder = lease.acquire(timeout=5)
        assert holder is not None and holder.pid == owner.pid and holder.role == "serve"
        assert not lease.held
        assert f"pid {owner.pid}" in str(LeaseHeld(tmp_path, holder))
    finally:
        owner.kill()
        owner.wait()


def test_the_kernel_releases_the_lease_of_a_killed_holder(tmp_path: Path) -> None:
    owner = holding(tmp_path)
    owner.send_signal(signal.SIGKILL)
    owner.wait()
    lease = OwnerLease(tmp_path, "serve")
    assert lease.acquire(timeout=5) is None and lease.held
    assert lease.holder() is not None and lease.holder().pid == os.getpid()  # type: ignore[union-attr]
    lease.release()


def test_a_departing_holder_is_waited_for_then_times_out(tmp_path: Path) -> None:
    first = OwnerLease(tmp_path, "serve")
    assert first.try_acquire()
    first.announce(STOPPING)
    with pytest.raises(LeaseHeld):
        OwnerLease(tmp_path, "serve").acquire(timeout=0.3)
    first.release()


def test_a_watchdog_never_takes_a_lease_someone_else_holds(tmp_path: Path) -> None:
    owner = holding(tmp_path)  # a newer owner, not the one the watchdog guards
    try:
        assert not take_over(OwnerLease(tmp_path, WATCHDOG), owner=(1, 1))
    finally:
        owner.kill()
        owner.wait()
    watchdog = OwnerLease(tmp_path, WATCHDOG)
    assert take_over(watchdog, owner=(1, 1))  # nobody adopted: the watchdog may act
    assert watchdog.holder() is not None and watchdog.holder().role == WATCHDOG  # type: ignore[union-attr]
    watchdog.release()
