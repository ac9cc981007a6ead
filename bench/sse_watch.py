"""SSE readers and a writer for the streaming benchmarks: events appended at a
controlled rate straight to the event store (`produce`), and session streams held open
by a process of their own (`Watcher`, which runs this module), so load, server and
readers never share a GIL; perf_counter is CLOCK_MONOTONIC, one clock for every
process. `delays_ms` pairs each commit with its arrivals.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from uuid import UUID

import httpx

from adapters.container import Container
from bench.api_harness import raise_fd_limit

Commit = tuple[int, int, float]  # (session index, version, perf_counter after commit)


def produce(
    c: Container, sessions: list[UUID], rate: float, seconds: float, threads: int = 4
) -> list[Commit]:
    """Append user messages round-robin over `sessions` at `rate` per second in total.

    Each of `threads` writers owns every `threads`-th session and keeps its own
    schedule, so one slow commit does not delay the others' events.
    """
    threads = min(threads, len(sessions))
    commits: list[Commit] = []
    lock = threading.Lock()
    start = time.perf_counter() + 0.05
    stop_at = start + seconds

    def write(k: int) -> None:
        mine = list(range(k, len(sessions), threads))
        interval = threads / rate
        next_at, n = start + k / rate, 0
        while next_at < stop_at:
            time.sleep(max(0.0, next_at - time.perf_counter()))
            index = mine[n % len(mine)]
            receipt = c.sessions.append_user_message(sessions[index], f"event {n}")
            done = time.perf_counter()
            with lock:
                commits.append((index, receipt.version, done))
            next_at, n = next_at + interval, n + 1

    workers = [threading.Thread(target=write, args=(k,)) for k in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return commits


def delays_ms(
    commits: list[Commit], arrivals: dict[tuple[int, int], float], watchers: list[int]
) -> tuple[list[float], int]:
    """Commit-to-arrival delays over every (stream, event) pair, and how many never came.

    `watchers[s]` is the session index stream `s` watches; `arrivals` maps
    (stream, version) to when its `id:` line arrived.
    """
    by_session: dict[int, list[int]] = {}
    for s, session in enumerate(watchers):
        by_session.setdefault(session, []).append(s)
    delays, missing = [], 0
    for session, version, committed in commits:
        for s in by_session.get(session, []):
            arrived = arrivals.get((s, version))
            if arrived is None:
                missing += 1
            else:
                delays.append((arrived - committed) * 1000)
    return delays, missing


@dataclass(frozen=True)
class Watched:
    """What a `Watcher` saw: arrival times by (stream, version), and what went wrong."""

    arrivals: dict[tuple[int, int], float]
    failures: list[str]
    ended: int


class Watcher:
    """SSE session streams held open by a process of its own, noting when each `id:` arrives.

    Returns from the constructor once every stream has delivered its first stored
    event (so it is subscribed and caught up) or failed.
    """

    def __init__(self, url: str, streams: list[tuple[UUID, str]], open_concurrency: int = 50):
        self.process = subprocess.Popen(
            [sys.executable, "-m", "bench.sse_watch", "watch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdin is not None and self.process.stdout is not None
        config = {"url": url, "streams": [[str(s), t] for s, t in streams]}
        self.process.stdin.write(json.dumps({**config, "open_concurrency": open_concurrency}))
        self.process.stdin.write("\n")
        self.process.stdin.flush()
        opened = json.loads(self.process.stdout.readline())
        self.ready, self.open_seconds = int(opened["ready"]), float(opened["seconds"])
        self.failures: list[str] = opened["failures"]

    @property
    def pid(self) -> int:
        return self.process.pid

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def stop(self) -> Watched:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("stop\n")
        self.process.stdin.flush()
        out = json.loads(self.process.stdout.read())
        self.process.wait(30)
        arrivals = {(s, v): t for s, v, t in out["arrivals"]}
        return Watched(arrivals, self.failures + out["failures"], int(out["ended"]))


class _Streams:
    """The reader process's side of a `Watcher` (see `watch_main`)."""

    def __init__(self, url: str, streams: list[list[str]], open_concurrency: int) -> None:
        self.url, self.streams = url, streams
        self.arrivals: list[tuple[int, int, float]] = []
        self.failures: list[str] = []
        self.settled, self.ended = 0, 0
        self.all_settled = asyncio.Event()
        self.gate = asyncio.Semaphore(open_concurrency)  # opens at most this many at a time

    def _settle(self) -> None:
        self.gate.release()
        self.settled += 1
        if self.settled == len(self.streams):
            self.all_settled.set()

    async def follow(self, http: httpx.AsyncClient, s: int) -> None:
        session_id, token = self.streams[s]
        await self.gate.acquire()
        opening = True
        try:
            path = f"/api/v1/sessions/{session_id}/stream"
            async with http.stream("GET", path, headers={"Authorization": f"Bearer {token}"}) as r:
                if r.status_code != 200:
                    self.failures.append(f"HTTP {r.status_code}: {(await r.aread())[:200]!r}")
                    return
                async for line in r.aiter_lines():
                    if line.startswith("id:"):
                        self.arrivals.append((s, int(line[3:]), time.perf_counter()))
                        if opening:
                            opening = False
                            self._settle()
                self.ended += 1
        except httpx.HTTPError as e:
            self.failures.append(f"{type(e).__name__}: {e}")
        finally:
            if opening:
                self._settle()

    async def run(self) -> None:
        """Open all, report, hold them until "stop" arrives on stdin, report what came."""
        raise_fd_limit()
        n = len(self.streams)
        limits = httpx.Limits(max_connections=n + 10, max_keepalive_connections=0)
        timeout = httpx.Timeout(60.0, read=None)  # keep-alives come every 15 s
        async with httpx.AsyncClient(base_url=self.url, limits=limits, timeout=timeout) as http:
            started = time.perf_counter()
            tasks = [asyncio.create_task(self.follow(http, s)) for s in range(n)]
            await self.all_settled.wait()
            ready = len({s for s, _, _ in self.arrivals})
            seconds = time.perf_counter() - started
            print(json.dumps({"ready": ready, "seconds": seconds, "failures": self.failures}))
            sys.stdout.flush()
            self.failures = []
            await asyncio.to_thread(sys.stdin.readline)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        print(
            json.dumps({"arrivals": self.arrivals, "failures": self.failures, "ended": self.ended})
        )


def watch_main() -> None:
    config = json.loads(sys.stdin.readline())
    asyncio.run(_Streams(config["url"], config["streams"], config["open_concurrency"]).run())


if __name__ == "__main__" and sys.argv[1:] == ["watch"]:
    watch_main()
