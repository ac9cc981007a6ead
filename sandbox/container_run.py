"""A container's run as `DockerSandbox` watches it: its output handed to the event loop
from a thread of its own, the first limit it reaches (and the kill), and how it ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
from collections.abc import Awaitable, Iterator, Mapping
from dataclasses import dataclass

from docker.errors import APIError
from docker.models.containers import Container

from sandbox.limits import ended_by
from sandbox.output import CappedStream
from schemas.sandbox import SandboxLimit, SandboxResult

KILLED_WAIT_SECONDS = 30.0  # how long a killed container may take to be reported ended


def _pump(
    stream: Iterator[tuple[bytes | None, bytes | None]],
    loop: asyncio.AbstractEventLoop,
    out: asyncio.StreamReader,
    err: asyncio.StreamReader,
) -> None:
    """Hands the container's output to the event loop as it comes, until it ends."""
    try:
        for out_chunk, err_chunk in stream:
            if out_chunk:
                loop.call_soon_threadsafe(out.feed_data, out_chunk)
            if err_chunk:
                loop.call_soon_threadsafe(err.feed_data, err_chunk)
    finally:
        loop.call_soon_threadsafe(out.feed_eof)
        loop.call_soon_threadsafe(err.feed_eof)


def pumped(
    stream: Iterator[tuple[bytes | None, bytes | None]],
    loop: asyncio.AbstractEventLoop,
    out: asyncio.StreamReader,
    err: asyncio.StreamReader,
) -> asyncio.Future[None]:
    """`_pump` on a thread of its own, done when the output ends. Not the loop's
    executor: a pump holds its thread for the whole run, and a few concurrent runs
    would take every thread from the engine calls, the kills among them."""
    done: asyncio.Future[None] = loop.create_future()

    def settle(error: BaseException | None) -> None:
        if done.done():  # the run was given up
            return
        if error is None:
            done.set_result(None)
        else:
            done.set_exception(error)

    def pump() -> None:
        try:
            _pump(stream, loop, out, err)
        except BaseException as error:
            loop.call_soon_threadsafe(settle, error)
        else:
            loop.call_soon_threadsafe(settle, None)

    threading.Thread(target=pump, name="docker-sandbox-output", daemon=True).start()
    return done


async def all_of(*parts: Awaitable[None]) -> None:
    await asyncio.gather(*parts)


async def watch(
    container: Container,
    finished: asyncio.Future[None],
    reasons: Mapping[Awaitable[None], SandboxLimit],
    wall_seconds: float,
) -> SandboxLimit | None:
    """Waits for the run to finish; kills it at the first limit it reaches (a reason
    that returns, or the wall clock) and says which. The output goes on being read
    meanwhile, or the engine could not end the container."""
    watchers = {asyncio.ensure_future(reason): limit for reason, limit in reasons.items()}
    killed_for: SandboxLimit | None = None
    try:
        done, _ = await asyncio.wait(
            {finished, *watchers},
            timeout=wall_seconds,
            return_when=asyncio.FIRST_COMPLETED,
        )
        if finished not in done:
            killed_for = next((watchers[w] for w in watchers if w in done), "wall_time")
            await asyncio.to_thread(kill, container)
        await asyncio.wait_for(asyncio.shield(finished), KILLED_WAIT_SECONDS)
    finally:
        for watcher in watchers:
            watcher.cancel()
    return killed_for


def kill(container: Container) -> None:
    # An error says it had ended (or podman tired of waiting for it to): the status it
    # ended with says whether this kill did it.
    with contextlib.suppress(APIError):
        container.kill()


@dataclass
class Ended:
    code: int
    oom_killed: bool
    killed_for: SandboxLimit | None
    out: CappedStream
    err: CappedStream
    duration_ms: int

    def result(self, files: dict[str, bytes]) -> SandboxResult:
        return SandboxResult(
            exit_code=self.code,
            stdout=self.out.text(),
            stderr=self.err.text(),
            duration_ms=self.duration_ms,
            files=files,
            limit=self._limit(),
            stdout_truncated=self.out.truncated,
            stderr_truncated=self.err.truncated,
        )

    def _limit(self) -> SandboxLimit | None:
        killed = self.code == -signal.SIGKILL
        if self.oom_killed or (killed and self.killed_for is None):
            # Not ours: the kernel's OOM killer (podman on cgroup v1 does not report it,
            # and the CPU time limit sends SIGXCPU a second before its SIGKILL).
            return "memory"
        # A kill that came after the run had ended on its own is no limit's doing.
        return ended_by(self.code, self.err.tail(), self.killed_for if killed else None)
