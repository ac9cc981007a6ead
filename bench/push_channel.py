"""Following N sessions: N SSE streams against one push socket (`WS /api/v1/ws`).

Before the push channel, a client keeping a list of sessions current held one SSE
stream per session (`GET /api/v1/sessions/{id}/stream`); now one socket subscribes to
all of them. On one `tokendance serve` (its own process, embedded Postgres and NATS),
for each N the same N sessions are followed either way by a process of its own
(`bench.sse_watch.Watcher`; `PushWatcher`, which runs `bench.push_watch`), or by
nobody (the baseline), while this process renames each session K times at a steady
rate straight through the event store: each rename is one stored event, an SSE
`session` event on its stream and a `session_update` on the socket. The three arms
take turns, the order rotated from round to round so the machine's drift weighs on
each alike.

Per arm: the server's CPU while followed and quiet (`--idle` seconds from 3 s after the
follower opened, as a share of a core), then its CPU seconds per 1,000 delivered events
over the renames and a settling pause (everything the server did: relaying and
projecting, which every arm pays alike, are what the baseline shows), commit -> arrival
delays, and a count check: every rename must arrive once on the follower of its
session, or the run fails. Memory: before the rounds, every follower set is opened on
top of the ones before it, nothing closed in between (so none reuses memory another
freed), and the server's VmRSS growth for each is taken once it settled.

python -m bench.push_channel [--sessions 50 200] [--renames 5] [--rate 100] [--pairs 3]
                             [--idle 15] [--no-deflate]   (about ten minutes)
python -m bench.push_channel --quick   (under two minutes)
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from subprocess import PIPE
from uuid import UUID

import httpx

from adapters.container import Container
from adapters.http.streams.ws_socket import MAX_SESSIONS
from bench.api_harness import (
    Stack,
    api_stack,
    cpu_seconds,
    create_sessions,
    machine,
    raised_limits,
    register,
    rss_kib,
)
from bench.harness import percentile
from bench.sse_watch import Commit, Watcher, delays_ms

SETTLE = 1.0  # seconds: after the last rename, and after opening followers to measure memory
ARMS = ("sse", "ws", "none")  # "none": the renames with nobody following
WARM = 5  # sessions each arm follows once before measuring, so first-use costs fall before


@dataclass(frozen=True)
class Options:
    sessions: list[int]
    renames: int
    rate: float
    pairs: int
    idle: float
    deflate: bool
    quiet_after: float = 3.0  # seconds from a follower's opening to its quiet window


# As --quick says; its quiet figures include the tail of opening the followers.
QUICK = Options([100], renames=2, rate=200.0, pairs=3, idle=2.0, deflate=True, quiet_after=1.0)


class PushWatcher(Watcher):
    """One socket subscribed to every session in `sessions`, in a process of its own.

    Returns from the constructor once the server has answered the subscription with a
    `session_update` for each session (or an `error` naming it).
    """

    def __init__(self, url: str, sessions: list[str], token: str, deflate: bool) -> None:
        command = [sys.executable, "-m", "bench.push_watch", "follow"]
        self.process = subprocess.Popen(command, stdin=PIPE, stdout=PIPE, text=True)
        assert self.process.stdin is not None and self.process.stdout is not None
        config = {"url": url, "sessions": sessions, "token": token, "deflate": deflate}
        self.process.stdin.write(json.dumps(config) + "\n")
        self.process.stdin.flush()
        opened = json.loads(self.process.stdout.readline())
        self.ready, self.open_seconds = int(opened["ready"]), float(opened["seconds"])
        self.failures: list[str] = opened["failures"]


@dataclass(frozen=True)
class Run:
    """One arm's run: server CPU seconds idle and over the renames, the follower's over
    the renames, events renamed, delays (ms)."""

    idle: float
    server: float
    client: float
    events: int
    delays: list[float]

    @property
    def per_thousand(self) -> float:
        """Server CPU seconds per 1,000 events."""
        return self.server / self.events * 1000


def follow(arm: str, stack: Stack, sessions: list[UUID], token: str, o: Options) -> Watcher:
    """The follower of `sessions`, one stream each or one socket, once it is caught up."""
    url = stack.server.url
    if arm == "sse":
        follower = Watcher(url, [(s, token) for s in sessions])
    else:
        follower = PushWatcher(url, [str(s) for s in sessions], token, o.deflate)
    if follower.ready != len(sessions) or follower.failures:
        follower.kill()
        raise SystemExit(
            f"{arm}: {follower.ready} of {len(sessions)} followed: {follower.failures}"
        )
    return follower


def rename_all(
    c: Container, sessions: list[UUID], renames: int, rate: float, tag: str, threads: int = 4
) -> list[Commit]:
    """Rename every session `renames` times, round-robin, at `rate` renames/s in total.

    Rename p (of session p % N) is due at start + p / rate; each of `threads` writers owns
    every `threads`-th session, so a session is never written by two at once.
    """
    n, threads = len(sessions), min(threads, len(sessions))
    start = time.perf_counter() + 0.05

    def write(k: int) -> list[Commit]:
        mine = []
        for p in (p for p in range(n * renames) if p % n % threads == k):
            time.sleep(max(0.0, start + p / rate - time.perf_counter()))
            receipt = c.sessions.rename_session(sessions[p % n], f"{tag} {p}")
            mine.append((p % n, receipt.version, time.perf_counter()))
        return mine

    with ThreadPoolExecutor(threads) as pool:
        return [commit for mine in pool.map(write, range(threads)) for commit in mine]


def run_arm(
    arm: str, stack: Stack, c: Container, sessions: list[UUID], token: str, o: Options
) -> Run:
    """Follow (or not), stay quiet, rename, settle; every rename must have arrived."""
    server = stack.server.pid
    follower = None if arm == "none" else follow(arm, stack, sessions, token, o)
    try:
        time.sleep(o.quiet_after)
        idle = cpu_seconds(server)
        time.sleep(o.idle)
        idle = cpu_seconds(server) - idle
        client = server if follower is None else follower.pid
        used, client_used = cpu_seconds(server), cpu_seconds(client)
        commits = rename_all(c, sessions, o.renames, o.rate, f"{arm}-{time.time()}")
        time.sleep(SETTLE)
        used = cpu_seconds(server) - used
        if follower is None:
            return Run(idle, used, 0.0, len(commits), [])
        client_used = cpu_seconds(client) - client_used
        watched = follower.stop()
    finally:
        if follower is not None:
            follower.kill()
    delays, missing = delays_ms(commits, watched.arrivals, list(range(len(sessions))))
    expected = len(sessions) * o.renames
    if missing or len(delays) != expected or watched.failures or watched.ended:
        raise SystemExit(
            f"{arm}, {len(sessions)} sessions: {len(delays)} of {expected} renames arrived "
            f"({missing} missing); follower ended {watched.ended}; {watched.failures[:3]}"
        )
    return Run(idle, used, client_used, len(delays), delays)


def memory(
    stack: Stack, sessions: list[UUID], token: str, o: Options
) -> dict[tuple[int, str], int]:
    """Server VmRSS growth (KiB) per follower set, each opened on top of the ones before."""
    grown: dict[tuple[int, str], int] = {}
    open_: list[Watcher] = []
    try:
        for n in o.sessions:
            for arm in ARMS[:2]:  # SSE first: any free memory left over favours it
                before = rss_kib(stack.server.pid)
                open_.append(follow(arm, stack, sessions[:n], token, o))
                time.sleep(SETTLE)
                grown[n, arm] = rss_kib(stack.server.pid) - before
    finally:
        for follower in open_:
            follower.kill()
    return grown


Runs = dict[tuple[int, str], list[Run]]  # by (N, arm)


def rounds(stack: Stack, c: Container, sessions: list[UUID], token: str, o: Options) -> Runs:
    """For each N, `pairs` rounds of the three arms, the order rotated from round to round."""
    runs: Runs = {(n, arm): [] for n in o.sessions for arm in ARMS}
    for n in o.sessions:
        for p in range(o.pairs):
            order = ARMS[p % 3 :] + ARMS[: p % 3]
            for arm in order:
                runs[n, arm].append(run_arm(arm, stack, c, sessions[:n], token, o))
            sse, ws, none = (runs[n, arm][-1].per_thousand for arm in ARMS)
            print(
                f"N={n} round {p + 1} ({', '.join(order)}): server CPU s per 1,000 events: "
                f"SSE {sse:.2f}, WS {ws:.2f}, nobody following {none:.2f}",
                flush=True,
            )
    return runs


def _spread(values: list[float], digits: int = 2) -> str:
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"median {mid:.{digits}f} ({low:.{digits}f}-{high:.{digits}f})"


def report(o: Options, runs: Runs, grown: dict[tuple[int, str], int]) -> None:
    for n in o.sessions:
        idle = {arm: [r.idle / o.idle * 100 for r in runs[n, arm]] for arm in ARMS}
        cpu = {arm: [r.per_thousand for r in runs[n, arm]] for arm in ARMS}
        print(
            f"--- N={n} sessions, {o.renames} renames each at {o.rate:g}/s, {o.pairs} rounds. "
            f"Nobody following: server CPU s per 1,000 renames {_spread(cpu['none'])}; "
            f"quiet: {_spread(idle['none'], 1)} % of a core"
        )
        above = {}
        for arm, name in (("sse", f"SSE ({n} streams)"), ("ws", "WS (1 socket)")):
            done = runs[n, arm]
            above[arm] = [x - b for x, b in zip(cpu[arm], cpu["none"], strict=True)]
            delays = [d for r in done for d in r.delays]
            client = [r.client / r.events * 1000 for r in done]
            print(
                f"{name}: server CPU s per 1,000 events {_spread(cpu[arm])}, above nobody "
                f"following {_spread(above[arm])}; quiet: {_spread(idle[arm], 1)} % of a core; "
                f"follower process {statistics.median(client):.2f} s per 1,000; delivery p50 "
                f"{percentile(delays, 50):.1f} ms, p95 {percentile(delays, 95):.1f} ms; "
                f"{sum(r.events for r in done)} of {n * o.renames * o.pairs} renames arrived; "
                f"server RSS +{grown[n, arm] / 1024:.1f} MiB while following"
            )
        ratios = [s / w for s, w in zip(cpu["sse"], cpu["ws"], strict=True)]
        sse, ws = statistics.median(above["sse"]), statistics.median(above["ws"])
        beyond = f"{sse / ws:.2f} (of the medians)" if ws > 0 else "n/a (WS within the noise)"
        print(f"SSE / WS, server CPU per event: {_spread(ratios)}; above nobody following {beyond}")


def options() -> Options:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add = parser.add_argument
    add(
        "--sessions",
        type=int,
        nargs="+",
        default=[50, 200],
        metavar="N",
        help=f"how many sessions the arms follow, one measure each (1 to {MAX_SESSIONS})",
    )
    add("--renames", type=int, default=5, metavar="K", help="renames per session in each arm")
    add("--rate", type=float, default=100.0, help="renames per second in all")
    add("--pairs", type=int, default=3, help="rounds of the arms (SSE, WS, nobody) per N")
    add(
        "--idle",
        type=float,
        default=15.0,
        help="seconds the server's CPU is taken over while followed and quiet (a socket "
        "re-reads its sessions after 15 quiet seconds)",
    )
    add(
        "--no-deflate",
        action="store_true",
        help="the socket does not offer permessage-deflate (browsers offer it)",
    )
    add(
        "--quick",
        action="store_true",
        help="a short run (under two minutes): --sessions 100 --renames 2 --rate 200 --pairs 3 "
        "--idle 2, the quiet window 1 s after opening",
    )
    args = parser.parse_args()
    if args.quick:
        return replace(QUICK, deflate=not args.no_deflate)
    if not all(0 < n <= MAX_SESSIONS for n in args.sessions):
        parser.error(f"--sessions: each from 1 to {MAX_SESSIONS}")
    if args.renames < 1 or args.pairs < 1 or args.rate <= 0 or args.idle <= 0:
        parser.error("--renames, --pairs, --rate and --idle must be positive")
    sessions = sorted(set(args.sessions))
    return Options(sessions, args.renames, args.rate, args.pairs, args.idle, not args.no_deflate)


def main() -> None:
    o = options()
    print(machine())
    print(f"server limits raised: {raised_limits()}")
    with api_stack() as stack:
        with httpx.Client(base_url=stack.server.url, timeout=30) as http:
            account = register(http, "push@bench.example")
            sessions = create_sessions(http, account, max(o.sessions))
        c = stack.store()
        try:
            warm = replace(o, renames=1, idle=0.0)
            for arm in ARMS[:2]:
                run_arm(arm, stack, c, sessions[:WARM], account.token, warm)
            start_rss = rss_kib(stack.server.pid)
            grown = memory(stack, sessions, account.token, o)
            runs = rounds(stack, c, sessions, account.token, o)
            end_rss = rss_kib(stack.server.pid)
        finally:
            c.close()
    print(f"server RSS {start_rss >> 10} MiB after the warm-up, {end_rss >> 10} MiB at the end")
    report(o, runs, grown)


if __name__ == "__main__":
    main()
