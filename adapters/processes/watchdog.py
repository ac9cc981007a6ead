"""Stops embedded servers when their owner dies, however it dies, unless a newer
process has adopted them by then.

The owner starts this with a pipe on stdin and never writes to it. When the owner
exits, even by SIGKILL, the kernel closes the pipe and this reads EOF (unless the
owner wrote "stopped" first: it stopped them itself). Then it stops the servers only
if it can take the data directory's ownership lease (`adapters/processes/lease.py`) while the
lease still names the dead owner: a newer process holding it has adopted the servers
and they are its own now. It holds the lease while it stops them, so a process that
starts meanwhile waits and then starts them afresh.

    python -m adapters.processes.watchdog --data-dir D --owner PID:START [--postgres] [--nats]
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path

from adapters.processes.embedded import stop_postgres
from adapters.processes.embedded_nats import read_nats_state, stop_process
from adapters.processes.lease import WATCHDOG, OwnerLease

# Seconds the owner's lease may outlive its pipe: both close as the process exits,
# in no order we can rely on.
RELEASE_WAIT = 15.0


def take_over(lease: OwnerLease, owner: tuple[int, int]) -> bool:
    """Take the lease from the dead `owner`; False if another process has it."""
    deadline = time.monotonic() + RELEASE_WAIT
    while not lease.try_acquire():
        holder = lease.holder()
        if holder is not None and (holder.pid, holder.started) != owner:
            return False  # adopted by a newer process
        if time.monotonic() > deadline:
            return False  # never stop what someone might be using
        time.sleep(0.02)
    return True


def stop_servers(data_dir: Path, *, postgres: bool, nats: bool) -> None:
    if nats and (state := read_nats_state(data_dir / "nats")) is not None:
        pid, _, started = state
        stop_process(pid, started)
        (data_dir / "nats" / "server.json").unlink(missing_ok=True)
    if postgres:
        stop_postgres(data_dir / "postgres")


def _owner(text: str) -> tuple[int, int]:
    pid, started = text.split(":")
    return int(pid), int(started)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--owner", type=_owner, required=True, help="PID:START of the owner")
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--nats", action="store_true")
    args = parser.parse_args()
    # The owner decides when we act; a Ctrl-C meant for it must not stop us first.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    said = b""
    while chunk := sys.stdin.buffer.read(4096):
        said += chunk
    if said.strip() == b"stopped":  # the owner stopped them itself
        return
    lease = OwnerLease(args.data_dir, WATCHDOG)
    if not take_over(lease, args.owner):
        return
    try:
        stop_servers(args.data_dir, postgres=args.postgres, nats=args.nats)
    finally:
        lease.release()


if __name__ == "__main__":
    main()
