"""Where one `serve` process spends its CPU per chat message and its run, sampled.

The load of `bench.chat_accept` (many sessions at once, each sending its messages one
after another; a scripted model answers each with one short text) runs twice on the
same `serve` process after a warm-up: once plain, for the CPU per message without a
profiler, then with py-spy (`py-spy record --format raw --function`, every thread, idle
threads left out; with --gil only the thread holding the GIL) sampling the server
process. The samples are read here: the top functions by cumulative and by own time,
as CPU milliseconds per message (samples / rate / messages), marked by where they
live: ours (adapters/, application/, domain/, projections/, schemas/) or a library
(litestar, eventsourcing, psycopg, nats, msgspec, uvicorn, asyncio, ...), and own time
summed by that group. On a machine busy with other work a thread that is runnable but
waits for a core still counts as not idle: --gil is the steadier measure then.

py-spy must be installed (`.venv/bin/pip install py-spy`) and may attach to a child
process (as root it may).

python -m bench.profile_serve [--sessions 100] [--messages 10] [--rate 250]
                              [--raw /tmp/serve.raw] [--top 25] [--gil]
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.api_harness import api_stack, cpu_seconds, create_sessions, machine, register
from bench.chat_accept import drive, write_script
from bench.harness import percentile

OURS = ("adapters", "application", "domain", "projections", "schemas")
LIBRARIES = (
    "litestar", "eventsourcing", "psycopg", "psycopg_pool", "nats", "msgspec", "uvicorn",
    "uvloop", "httptools", "h11", "anyio", "pydantic", "opentelemetry", "jwt", "sqlalchemy",
)  # fmt: skip
FRAME = re.compile(r"^(?P<func>.*) \((?P<file>.*?)(?::(?P<line>\d+))?\)$")


@dataclass(frozen=True)
class Function:
    name: str
    where: str  # path as shown (ours from the repo root, a library from its package)
    group: str


def _group_and_path(file: str) -> tuple[str, str]:
    parts = Path(file).parts
    if "site-packages" in parts:
        rest = parts[parts.index("site-packages") + 1 :]
        package = rest[0] if rest else "?"
        return (package if package in LIBRARIES else f"other: {package}"), "/".join(rest)
    root = Path.cwd().parts
    if parts[: len(root)] == root and len(parts) > len(root):
        rest = parts[len(root) :]
        return ("ours: " + rest[0] if rest[0] in OURS else rest[0]), "/".join(rest)
    if "asyncio" in parts:
        return "asyncio", "asyncio/" + parts[-1]
    if file.startswith("<") or not parts:
        return "other", file
    return "stdlib", parts[-1]


def _function(frame: str) -> Function:
    m = FRAME.match(frame)
    if m is None:
        return Function(frame, "?", "other")
    group, path = _group_and_path(m["file"])
    line = f":{m['line']}" if m["line"] else ""
    return Function(m["func"], path + line, group)


@dataclass(frozen=True)
class Profile:
    samples: int
    own: Counter[Function]
    cumulative: Counter[Function]


def read_raw(path: Path) -> Profile:
    """Collapsed stacks (`root;...;leaf count`, py-spy's raw format) -> own and cumulative."""
    own: Counter[Function] = Counter()
    cumulative: Counter[Function] = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        total += count
        frames = [_function(f) for f in stack.split(";") if f]
        if not frames:
            continue
        own[frames[-1]] += count
        for function in set(frames):
            cumulative[function] += count
    return Profile(total, own, cumulative)


def print_profile(profile: Profile, per_message: float, top: int) -> None:
    """`per_message`: CPU milliseconds one sample stands for, per message."""

    def table(title: str, counts: Counter[Function], only: str | None = None) -> None:
        print(f"\n{title}")
        print(f"  {'ms/msg':>7} {'%':>5}  {'group':<22} function (file:line of its def)")
        rows = [(f, n) for f, n in counts.most_common() if only is None or f.group == only]
        for function, n in rows[:top]:
            share = 100 * n / profile.samples
            print(
                f"  {n * per_message:7.2f} {share:5.1f}  {function.group:<22} "
                f"{function.name} ({function.where})"
            )

    table(f"top {top} by cumulative time (the function and what it calls)", profile.cumulative)
    table(f"top {top} by own time (the function's own code)", profile.own)
    groups: Counter[str] = Counter()
    for function, n in profile.own.items():
        groups[function.group] += n
    print("\nown time by group")
    for group, n in groups.most_common():
        print(f"  {n * per_message:7.2f} ms/msg {100 * n / profile.samples:5.1f}%  {group}")
    ours_cumulative: Counter[Function] = Counter(
        {f: n for f, n in profile.cumulative.items() if f.group.startswith("ours")}
    )
    table(f"top {top} of our functions by cumulative time", ours_cumulative)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=100, help="sessions talking at once")
    parser.add_argument("--messages", type=int, default=10, help="messages per session")
    parser.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    parser.add_argument("--raw", type=Path, help="keep py-spy's collapsed stacks here")
    parser.add_argument("--top", type=int, default=25, help="rows per table")
    parser.add_argument(
        "--gil",
        action="store_true",
        help="sample only the thread holding the GIL (Python CPU; leaves out C code that "
        "releases it, such as libpq's I/O; less sensitive to a machine busy elsewhere)",
    )
    options = parser.parse_args()
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    print(f"{datetime.datetime.now().isoformat(timespec='seconds')}; {machine()}")
    n = options.sessions * options.messages
    with tempfile.TemporaryDirectory(prefix="tokendance-profile-") as scratch:
        raw = options.raw or Path(scratch) / "serve.raw"
        script = write_script(Path(scratch), options.messages + 5)
        with api_stack(script=script) as stack:
            url, pid = stack.server.url, stack.server.pid
            with httpx.Client(base_url=url, timeout=30) as http:
                account = register(http, "profile@bench.example")
                sessions = create_sessions(http, account, 2 * options.sessions + 20)
            warm = asyncio.run(drive(url, account, sessions[:20], 3))
            assert len(warm.completed) == 60, warm.refused
            for profiled, ids in (
                (False, sessions[20 : 20 + options.sessions]),
                (True, sessions[20 + options.sessions :]),
            ):
                spy = None
                if profiled:
                    spy = subprocess.Popen(
                        [py_spy, "record", "--pid", str(pid), "--format", "raw", "--function",
                         "--full-filenames", "--rate", str(options.rate), "--nonblocking",
                         "--output", str(raw), *(["--gil"] if options.gil else [])],
                        stdout=subprocess.DEVNULL,
                    )  # fmt: skip
                    time.sleep(1.0)  # attached
                before, started = cpu_seconds(pid), time.perf_counter()
                tally = asyncio.run(drive(url, account, ids, options.messages))
                seconds = max(tally.completed) - started
                used = cpu_seconds(pid) - before
                if spy is not None:
                    spy.send_signal(signal.SIGINT)
                    spy.wait(60)
                done = len(tally.completed)
                print(
                    f"{'with py-spy' if profiled else 'plain'}: {done}/{n} runs in {seconds:.1f} s "
                    f"= {done / seconds:.1f} messages/s, POST -> done p50 "
                    f"{percentile(tally.complete_ms, 50):.0f} ms; serve CPU per message "
                    f"{used / max(done, 1) * 1000:.1f} ms; load average {os.getloadavg()[0]:.2f}"
                )
        profile = read_raw(raw)
        print(
            f"\n{profile.samples} samples at {options.rate}/s over {n} messages "
            f"({'the GIL holder' if options.gil else 'non-idle threads'}; "
            f"a sample = {1000 / options.rate / n:.4f} ms per message)"
        )
        print_profile(profile, 1000 / options.rate / n, options.top)


if __name__ == "__main__":
    main()
