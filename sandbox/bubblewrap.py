"""BubblewrapSandbox: runs untrusted code under bubblewrap on this machine.

Each run gets every namespace of its own (no network: its loopback only), read-only
system directories and interpreter, a fresh work directory as its only writable
place besides a size-capped /tmp, a uid of its own inside and out, a cleared
environment, a seccomp filter, and kernel resource limits; a wall clock and an
output cap end it from outside, and ending bubblewrap ends its whole PID namespace.
Memory is limited per process (prlimit) and for the whole run (sandbox/memory.py: a
cgroup of its own where the machine offers one, else a watchdog over its processes).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

from sandbox import workdir
from sandbox.command import (
    PROXY_SOCKET,
    RunPaths,
    probe_argv,
    reach_argv,
    sandbox_argv,
    setpriv_argv,
)
from sandbox.limits import PRLIMIT, ended_by, exit_code
from sandbox.memory import MemoryGuard, RunMemory, detect
from sandbox.output import CappedStream
from sandbox.proxy import FilteringProxy, Resolver, public_addresses
from sandbox.python import PythonRuntime
from sandbox.reaper import Init
from sandbox.seccomp import filter_bpf
from sandbox.uids import HostUids
from schemas.sandbox import SandboxLimit, SandboxResult, SandboxRun, SandboxUnavailable

REAP_SECONDS = 10.0  # how long a killed run may take to be gone

log = logging.getLogger(__name__)


class BubblewrapSandbox:
    """The Sandbox port on bubblewrap (Debian's `bubblewrap` package)."""

    name = "bubblewrap"

    def __init__(
        self,
        root: Path,
        *,
        python: PythonRuntime | None = None,
        bwrap: str = "bwrap",
        work_bytes: int = 256 * 1024 * 1024,
        work_files: int = 10_000,
        uids: HostUids | None = None,
        resolve: Resolver = public_addresses,
        memory: RunMemory | None = None,
    ) -> None:
        """`root`: where runs' work directories are made. `work_bytes`/`work_files`:
        what a run may add to its work directory. `uids`: the host uids runs get
        when the server is root. `resolve`: the proxy's name resolver. `memory`: how a
        run is held to one memory limit (by default what `check` detects here)."""
        self.root = Path(os.path.realpath(root))
        self.python = python or PythonRuntime.current()
        self.bwrap = bwrap
        self.work_bytes = work_bytes
        self.work_files = work_files
        self.uids = uids or HostUids()
        self.resolve = resolve
        self._memory = memory
        self._checked = False

    def check(self) -> None:
        """Raise SandboxUnavailable naming what this machine lacks."""
        if self._checked:
            return
        bwrap = shutil.which(self.bwrap)
        if bwrap is None:
            raise SandboxUnavailable("bubblewrap is not installed: apt-get install bubblewrap")
        for tool, package in ((PRLIMIT, "util-linux"), ("/usr/bin/setpriv", "util-linux")):
            if not os.path.exists(tool):
                raise SandboxUnavailable(f"{tool} is missing: apt-get install {package}")
        filter_bpf()
        probe = probe_argv(bwrap)
        with self.uids.lease() as uid:
            if os.geteuid() == 0:  # runs are an unprivileged uid: probe as one
                probe = [*setpriv_argv(uid), *probe]
            ran = subprocess.run(probe, capture_output=True, text=True, env={}, check=False)
        if ran.returncode != 0:
            raise SandboxUnavailable(
                f"bubblewrap cannot make a sandbox here ({ran.stderr.strip()}): user "
                "namespaces may be off (sysctl user.max_user_namespaces, "
                "kernel.unprivileged_userns_clone=1) or bubblewrap older than 0.8"
            )
        self.bwrap = bwrap
        log.info("sandbox: bubblewrap; run memory limit: %s", self.memory.describe())
        self._checked = True

    @property
    def memory(self) -> RunMemory:
        """How a run is held to one memory limit on this machine."""
        if self._memory is None:
            self._memory = detect()
        return self._memory

    def available(self) -> bool:
        """Whether runs can work here (`check` says why not)."""
        try:
            self.check()
        except SandboxUnavailable:
            return False
        return True

    async def run(self, run: SandboxRun) -> SandboxResult:
        if not self._checked:
            await asyncio.to_thread(self.check)
        if run.allow_domains and shutil.which("socat", path="/usr/bin") is None:
            raise SandboxUnavailable("the network allowlist needs socat: apt-get install socat")
        self.root.mkdir(parents=True, exist_ok=True, mode=0o711)
        with self.uids.lease() as uid:
            owner = (uid, uid) if os.geteuid() == 0 else None
            work = await asyncio.to_thread(workdir.create, self.root, run.files, owner)
            try:
                async with self._network(run, owner) as socket_path:
                    paths = RunPaths(str(work), socket_path)
                    return await self._execute(run, paths, uid if owner else None)
            finally:
                await asyncio.to_thread(workdir.remove, work)

    @contextlib.asynccontextmanager
    async def _network(
        self, run: SandboxRun, owner: tuple[int, int] | None
    ) -> AsyncIterator[str | None]:
        """The host end of the run's proxy socket, or None: no network at all."""
        if not run.allow_domains:
            yield None
            return
        proxy = FilteringProxy(run.allow_domains, resolve=self.resolve)
        with tempfile.TemporaryDirectory(prefix="net-", dir=self.root) as net:
            os.chmod(net, 0o711)
            path = os.path.join(net, os.path.basename(PROXY_SOCKET))
            async with proxy.listening(path, owner):
                yield path

    async def _execute(self, run: SandboxRun, paths: RunPaths, uid: int | None) -> SandboxResult:
        async with self.memory.limit(run.limits.memory_bytes) as memory:
            return await self._execute_within(run, paths, uid, memory)

    async def _execute_within(
        self, run: SandboxRun, paths: RunPaths, uid: int | None, memory: MemoryGuard
    ) -> SandboxResult:
        seccomp_r, seccomp_w = os.pipe()
        status_r, status_w = os.pipe()
        os.write(seccomp_w, filter_bpf())  # a few hundred bytes: fits the pipe
        os.close(seccomp_w)
        fds = {"seccomp": seccomp_r, "status": status_w}
        argv = sandbox_argv(self.bwrap, self.python, run.limits, paths, fds, run.argv)
        if uid is not None:
            argv = self._as_run_uid(argv, paths, uid)
        argv = memory.wrap(argv)
        started = time.monotonic()
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                pass_fds=(seccomp_r, status_w),
                env={"PATH": "/usr/bin:/bin"},  # bubblewrap's own: the code sees none of it
                cwd="/",
                start_new_session=True,
            )
        finally:
            os.close(seccomp_r)
            os.close(status_w)
        with open(status_r, "rb") as status:
            reported = asyncio.create_task(asyncio.to_thread(Init.read, status))
            ended = await self._supervise(proc, run, paths, memory)
            duration_ms = int((time.monotonic() - started) * 1000)
            init = await reported
            try:
                await init.gone(REAP_SECONDS)
            finally:
                init.close()
        if not init.started:
            raise SandboxUnavailable(f"bubblewrap could not start the run: {ended.err.text()}")
        files = await asyncio.to_thread(
            workdir.changed, Path(paths.work), run.files, self.work_bytes, self.work_files
        )
        return self._result(proc, ended, duration_ms, files)

    def _as_run_uid(self, argv: list[str], paths: RunPaths, uid: int) -> list[str]:
        """bubblewrap started as the run's uid (by setpriv), reaching what it binds."""
        sources = [(p, False) for p in self.python.paths] + [(paths.work, True)]
        if paths.proxy_socket is not None:
            sources.append((paths.proxy_socket, True))
        return [*reach_argv(self.bwrap, sources), *setpriv_argv(uid), *argv]

    async def _supervise(
        self,
        proc: asyncio.subprocess.Process,
        run: SandboxRun,
        paths: RunPaths,
        memory: MemoryGuard,
    ) -> Ended:
        assert proc.stdin and proc.stdout and proc.stderr
        stdout, stderr = proc.stdout, proc.stderr
        out, err = CappedStream(run.limits.output_bytes), CappedStream(run.limits.output_bytes)
        feed = asyncio.create_task(_feed(proc.stdin, run.stdin))

        async def finish() -> None:
            await asyncio.gather(proc.wait(), out.drain(stdout), err.drain(stderr))

        finished = asyncio.create_task(finish())
        watchers: dict[asyncio.Task[None], SandboxLimit] = {
            asyncio.create_task(out.flooded()): "output",
            asyncio.create_task(err.flooded()): "output",
            asyncio.create_task(
                workdir.over_quota(Path(paths.work), run.files, self.work_bytes, self.work_files)
            ): "file_size",
            asyncio.create_task(memory.reached(proc.pid)): "memory",
        }
        killed_for: SandboxLimit | None = None
        try:
            done, _ = await asyncio.wait(
                {finished, *watchers},
                timeout=run.limits.wall_seconds,
                return_when=asyncio.FIRST_COMPLETED,
            )
            if finished not in done:
                killed_for = next((watchers[w] for w in watchers if w in done), "wall_time")
                _kill(proc)
            await asyncio.wait_for(asyncio.shield(finished), REAP_SECONDS)
            if killed_for is None and memory.tripped:  # the kernel killed for memory
                killed_for = "memory"
        finally:
            _kill(proc)  # also when the caller gave up on the run
            for task in (feed, *watchers):
                task.cancel()
        return Ended(out, err, killed_for)

    @staticmethod
    def _result(
        proc: asyncio.subprocess.Process,
        ended: Ended,
        duration_ms: int,
        files: dict[str, bytes],
    ) -> SandboxResult:
        assert proc.returncode is not None
        code = exit_code(proc.returncode)
        return SandboxResult(
            exit_code=code,
            stdout=ended.out.text(),
            stderr=ended.err.text(),
            duration_ms=duration_ms,
            files=files,
            limit=ended_by(code, ended.err.tail(), ended.killed_for),
            stdout_truncated=ended.out.truncated,
            stderr_truncated=ended.err.truncated,
        )


class Ended:
    """How the run's process ended: its streams, and the limit it was killed for."""

    def __init__(self, out: CappedStream, err: CappedStream, killed_for: SandboxLimit | None):
        self.out, self.err, self.killed_for = out, err, killed_for


def _kill(proc: asyncio.subprocess.Process) -> None:
    """SIGKILL bubblewrap's process group: its PID namespace dies with it."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)


async def _feed(stdin: asyncio.StreamWriter, data: bytes) -> None:
    with contextlib.suppress(OSError):
        if data:
            stdin.write(data)
            await stdin.drain()
        stdin.close()
