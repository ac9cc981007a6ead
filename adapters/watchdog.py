"""Stops embedded servers when their owner dies, however it dies.

The owner starts this with a pipe on stdin and never writes to it. When the owner
exits, even by SIGKILL, the kernel closes the pipe and this reads EOF, then stops
the servers the owner had started (unless the owner wrote "stopped" first).

    python -m adapters.watchdog --pgdata D --nats-pid P
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import time
from pathlib import Path

from adapters.embedded import stop_postgres


def _stop_nats(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            os.kill(pid, 0)
            time.sleep(0.05)
        os.kill(pid, signal.SIGKILL)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pgdata", type=Path)
    parser.add_argument("--nats-pid", type=int)
    args = parser.parse_args()
    # The owner decides when we act; a Ctrl-C meant for it must not stop us first.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    said = b""
    while chunk := sys.stdin.buffer.read(4096):
        said += chunk
    if said.strip() == b"stopped":  # the owner stopped them itself
        return
    if args.nats_pid:
        _stop_nats(args.nats_pid)
    if args.pgdata:
        stop_postgres(args.pgdata)


if __name__ == "__main__":
    main()
