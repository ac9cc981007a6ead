"""DockerSandbox: runs untrusted code in a throwaway container of the sandbox image.

The container has no network (its loopback only: allowed domains are reached through
the host's filtering proxy, its unix socket mounted in and bridged to a loopback port
as the bubblewrap runner does), a read-only root filesystem, a
size-capped /tmp, memory, CPU and pids limits, rlimits on CPU time, file size and open
files, no capability, no privilege gain, a non-root uid of its own and only the
environment set here. Its one writable mount is the run's fresh work directory, a
directory of this host, so the engine must run on this host: Docker, or podman's
Docker-compatible service (sandbox/podman_service.sh). The image:
sandbox/build_image.sh, or sandbox/Dockerfile where a registry answers.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Iterator
from dataclasses import dataclass
from pathlib import Path

import docker
import requests
from docker.errors import DockerException, ImageNotFound
from docker.models.containers import Container
from docker.types import LogConfig, Mount, Ulimit

from sandbox import workdir

# _BRIDGE: the bubblewrap runner's loopback-to-proxy-socket bridge, used as it is.
from sandbox.command import _BRIDGE, PASSED_ON, PROXY_PORT, PROXY_SOCKET
from sandbox.container_run import KILLED_WAIT_SECONDS, Ended, all_of, pumped, watch
from sandbox.limits import exit_code
from sandbox.output import CappedStream
from sandbox.proxy import FilteringProxy, Resolver, public_addresses
from sandbox.uids import HostUids
from schemas.sandbox import (
    SandboxLimit,
    SandboxLimits,
    SandboxResult,
    SandboxRun,
    SandboxUnavailable,
)

DEFAULT_IMAGE = "tokendance-sandbox:latest"
WORK_DIR = "/work"
STDIN_PATH = "/run/stdin"
# podman gives a container a million processes unless told, which an engine without
# CAP_SYS_RESOURCE cannot set; the pids cgroup is what caps a run's processes.
NPROC_CEILING = 4096
_ENGINE_ERRORS = (DockerException, requests.RequestException)


class DockerSandbox:
    """The Sandbox port on a Docker-API engine of this host (`TOKENDANCE_SANDBOX=docker`)."""

    name = "docker"

    def __init__(
        self,
        client: docker.DockerClient | None = None,
        *,
        image: str = DEFAULT_IMAGE,
        root: Path | None = None,
        cpus: float = 1.0,
        work_bytes: int = 256 * 1024 * 1024,
        work_files: int = 10_000,
        uids: HostUids | None = None,
        resolve: Resolver = public_addresses,
    ) -> None:
        """`client`: None builds one from DOCKER_HOST on first use. `root`: where work
        directories are made (default: the temporary directory). `work_bytes` and
        `work_files`: what a run may add to its work directory. `uids`: the host uids
        runs get when the server is root. `resolve`: the proxy's name resolver."""
        self._client = client
        self.image = image
        self.root = root
        self.cpus = cpus
        self.work_bytes = work_bytes
        self.work_files = work_files
        self.uids = uids or HostUids()
        self.resolve = resolve
        self._image_found = False

    async def run(self, run: SandboxRun) -> SandboxResult:
        try:
            return await self._run(run)
        except ImageNotFound:
            self._image_found = False
            raise SandboxUnavailable(
                f"the sandbox image {self.image} is not in the Docker engine at "
                f"{self._where()}: build it with sandbox/build_image.sh"
            ) from None
        except requests.ConnectionError as e:
            raise self._no_engine(e) from None
        except _ENGINE_ERRORS as e:
            raise SandboxUnavailable(f"the Docker engine failed the run: {e}") from None

    async def _run(self, run: SandboxRun) -> SandboxResult:
        client = await asyncio.to_thread(self._ready)
        with self.uids.lease() as uid:
            owner = (uid, uid) if os.geteuid() == 0 else None
            user = f"{uid}:{uid}" if owner else f"{os.getuid()}:{os.getgid()}"
            if self.root is not None:
                self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
            base = Path(tempfile.mkdtemp(prefix="tokendance-docker-", dir=self.root))
            try:
                async with self._proxy(run, base, owner) as proxy:
                    paths = await asyncio.to_thread(_Paths.make, base, run, owner, proxy)
                    return await self._contain(client, run, paths, user)
            finally:
                await asyncio.to_thread(workdir.remove, base)

    async def _contain(
        self, client: docker.DockerClient, run: SandboxRun, paths: _Paths, user: str
    ) -> SandboxResult:
        """The run in a container, always removed; then what it wrote."""
        container = await asyncio.to_thread(self._create, client, run, paths, user)
        try:
            ended = await self._supervise(container, run, paths.work)
        finally:
            await asyncio.to_thread(container.remove, force=True)
        files = await asyncio.to_thread(
            workdir.changed, paths.work, run.files, self.work_bytes, self.work_files
        )
        return ended.result(files)

    @contextlib.asynccontextmanager
    async def _proxy(
        self, run: SandboxRun, base: Path, owner: tuple[int, int] | None
    ) -> AsyncIterator[Path | None]:
        """The host end of the run's proxy socket, or None: no network at all."""
        if not run.allow_domains:
            yield None
            return
        path = base / "proxy.sock"
        async with FilteringProxy(run.allow_domains, resolve=self.resolve).listening(
            str(path), owner
        ):
            yield path

    def _ready(self) -> docker.DockerClient:
        """The client, its engine answering and the image there (checked once)."""
        if self._client is None:
            try:
                self._client = docker.from_env()
            except DockerException as e:
                raise self._no_engine(e) from None
        if not self._image_found:
            self._client.images.get(self.image)
            self._image_found = True
        return self._client

    def _create(
        self, client: docker.DockerClient, run: SandboxRun, paths: _Paths, user: str
    ) -> Container:
        limits = run.limits
        return client.containers.create(
            self.image,
            paths.argv(run.argv),
            user=user,
            working_dir=WORK_DIR,
            environment={**self._environment(), **paths.environment()},
            network_mode="none",
            read_only=True,
            mounts=list(paths.mounts()),
            tmpfs={"/tmp": f"rw,nosuid,nodev,size={limits.tmp_bytes},mode=1777"},
            mem_limit=limits.memory_bytes,
            memswap_limit=limits.memory_bytes,  # no swap
            nano_cpus=int(self.cpus * 1e9),
            pids_limit=limits.processes,
            ulimits=_ulimits(limits),
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            ipc_mode="private",
            init=True,  # the code is not pid 1, so its signals and rlimits act as usual
            hostname="sandbox",
            log_config=LogConfig(type="none"),  # the output is read live and capped
            labels={"tokendance.sandbox": "docker"},
        )

    def _environment(self) -> dict[str, str]:
        threads = str(max(1, math.ceil(self.cpus)))
        return {
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": "/tmp",
            "TMPDIR": "/tmp",
            "LANG": "C.UTF-8",
            "MPLBACKEND": "Agg",
            "MPLCONFIGDIR": "/tmp/matplotlib",
            "PYTHONDONTWRITEBYTECODE": "1",
            # BLAS starts a thread per host core unless told, and threads count as pids.
            "OPENBLAS_NUM_THREADS": threads,
            "OMP_NUM_THREADS": threads,
            **{name: os.environ[name] for name in PASSED_ON if name in os.environ},
        }

    async def _supervise(self, container: Container, run: SandboxRun, work: Path) -> Ended:
        """Starts the container and reads its output until it ends or a limit kills it."""
        loop = asyncio.get_running_loop()
        out, err = CappedStream(run.limits.output_bytes), CappedStream(run.limits.output_bytes)
        out_pipe, err_pipe = asyncio.StreamReader(), asyncio.StreamReader()
        stream = await asyncio.to_thread(
            container.attach, stdout=True, stderr=True, stream=True, demux=True, logs=False
        )
        started = time.monotonic()
        try:
            await asyncio.to_thread(container.start)
            pump = pumped(stream, loop, out_pipe, err_pipe)
            finished = asyncio.ensure_future(all_of(pump, out.drain(out_pipe), err.drain(err_pipe)))
            reasons: dict[Awaitable[None], SandboxLimit] = {
                out.flooded(): "output",
                err.flooded(): "output",
                workdir.over_quota(work, run.files, self.work_bytes, self.work_files): "file_size",
            }
            killed_for = await watch(container, finished, reasons, run.limits.wall_seconds)
        finally:
            stream.close()
        status = (await asyncio.to_thread(container.wait, timeout=KILLED_WAIT_SECONDS))[
            "StatusCode"
        ]
        duration_ms = int((time.monotonic() - started) * 1000)
        await asyncio.to_thread(container.reload)
        return Ended(
            code=exit_code(status),
            oom_killed=bool(container.attrs.get("State", {}).get("OOMKilled")),
            killed_for=killed_for,
            out=out,
            err=err,
            duration_ms=duration_ms,
        )

    def _where(self) -> str:
        if self._client is not None:
            return str(self._client.api.base_url)
        return os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")

    def _no_engine(self, error: Exception) -> SandboxUnavailable:
        return SandboxUnavailable(
            f"no Docker engine answers at {self._where()} ({error}): start Docker, or "
            "podman's service with sandbox/podman_service.sh and set DOCKER_HOST to the "
            "socket it prints"
        )


@dataclass(frozen=True)
class _Paths:
    """Host paths of one run: its work directory, the file holding its stdin and its
    proxy's socket (when it has them)."""

    work: Path
    stdin: Path | None
    proxy: Path | None

    @classmethod
    def make(
        cls, base: Path, run: SandboxRun, owner: tuple[int, int] | None, proxy: Path | None
    ) -> _Paths:
        work = workdir.create(base, run.files, owner)
        stdin = base / "stdin" if run.stdin else None
        if stdin is not None:
            stdin.write_bytes(run.stdin)
        return cls(work, stdin, proxy)

    def mounts(self) -> Iterator[Mount]:
        yield Mount(target=WORK_DIR, source=str(self.work), type="bind", read_only=False)
        if self.stdin is not None:
            yield Mount(target=STDIN_PATH, source=str(self.stdin), type="bind", read_only=True)
        if self.proxy is not None:
            yield Mount(target=PROXY_SOCKET, source=str(self.proxy), type="bind")

    def argv(self, argv: tuple[str, ...]) -> list[str]:
        command = list(argv)
        if self.proxy is not None:
            command = ["/bin/sh", "-c", _BRIDGE.format(socat="/usr/bin/socat"), "sh", *command]
        if self.stdin is not None:
            # An engine feeds stdin only to a client attached for it; a file is simpler.
            command = ["/bin/sh", "-c", f'exec "$@" <{STDIN_PATH}', "sh", *command]
        return command  # with no stdin file, stdin is /dev/null

    def environment(self) -> dict[str, str]:
        """The proxy variables, when the run has a proxy."""
        if self.proxy is None:
            return {}
        url = f"http://127.0.0.1:{PROXY_PORT}"
        return {name: url for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")}


def _ulimits(limits: SandboxLimits) -> list[Ulimit]:
    cpu = max(1, int(limits.cpu_seconds))
    return [
        Ulimit(name="cpu", soft=cpu, hard=cpu + 1),  # SIGXCPU, then SIGKILL a second later
        Ulimit(name="fsize", soft=limits.file_bytes, hard=limits.file_bytes),
        Ulimit(name="nofile", soft=limits.open_files, hard=limits.open_files),
        Ulimit(name="nproc", soft=NPROC_CEILING, hard=NPROC_CEILING),
        Ulimit(name="core", soft=0, hard=0),  # no core files in the work directory
    ]
