"""The Docker sandbox against a real Docker-API engine (Docker, or podman's service).

They run where an engine answers (DOCKER_HOST, else the Docker socket, else podman's
at /run/podman/podman.sock: sandbox/podman_service.sh starts it) and has the sandbox
image (sandbox/build_image.sh); elsewhere they skip and say which is missing. The
refusals that need no engine run everywhere.
"""

from __future__ import annotations

import asyncio
import os
import socket
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import docker
import psutil
import pytest
from docker.errors import DockerException, ImageNotFound

from sandbox.docker import DEFAULT_IMAGE, DockerSandbox
from sandbox.workdir import BadFileName
from schemas.sandbox import (
    SandboxLimits,
    SandboxResult,
    SandboxRun,
    SandboxUnavailable,
)

ENGINES = ("unix:///var/run/docker.sock", "unix:///run/podman/podman.sock")
IMAGE = os.environ.get("TOKENDANCE_SANDBOX_IMAGE", DEFAULT_IMAGE)
FAST = SandboxLimits(wall_seconds=20.0)


def _answering_engine() -> tuple[docker.DockerClient | None, str]:
    """A client of the first engine that answers, or None and what was tried."""
    urls = [os.environ["DOCKER_HOST"]] if os.environ.get("DOCKER_HOST") else list(ENGINES)
    for url in urls:
        try:
            client = docker.DockerClient(base_url=url, timeout=30)
            client.ping()
        except DockerException:
            continue
        return client, url
    return None, ", ".join(urls)


@pytest.fixture(scope="module")
def client() -> Iterator[docker.DockerClient]:
    found, where = _answering_engine()
    if found is None:
        pytest.skip(f"no Docker-API engine answers at {where} (sandbox/podman_service.sh)")
    try:
        found.images.get(IMAGE)
    except ImageNotFound:
        pytest.skip(f"the engine at {where} has no {IMAGE} (sandbox/build_image.sh)")
    yield found
    found.close()


@pytest.fixture(scope="module")
def sandbox(client: docker.DockerClient) -> DockerSandbox:
    return DockerSandbox(client, image=IMAGE)


async def python(
    sandbox: DockerSandbox,
    code: str,
    *,
    limits: SandboxLimits = FAST,
    files: dict[str, bytes] | None = None,
    args: tuple[str, ...] = (),
) -> SandboxResult:
    run = SandboxRun(("python3", "-c", textwrap.dedent(code), *args), files or {}, limits)
    return await sandbox.run(run)


def sandbox_containers(client: docker.DockerClient) -> list[str]:
    found = client.containers.list(all=True, filters={"label": "tokendance.sandbox"})
    return [c.id or "" for c in found]


async def test_prints_and_exits_with_its_code(sandbox: DockerSandbox) -> None:
    result = await python(
        sandbox, "import sys; print('hello'); print('oops', file=sys.stderr); sys.exit(3)"
    )
    assert (result.stdout, result.stderr, result.exit_code) == ("hello\n", "oops\n", 3)
    assert result.limit is None and result.files == {}


async def test_code_on_stdin_runs(sandbox: DockerSandbox) -> None:
    run = SandboxRun(("python3", "-I", "-"), stdin=b"print(6 * 7)\n", limits=FAST)
    result = await sandbox.run(run)
    assert (result.stdout, result.exit_code) == ("42\n", 0)


async def test_files_written_come_back_and_unchanged_inputs_do_not(
    sandbox: DockerSandbox,
) -> None:
    code = """
        import os
        rows = open('data/in.csv').read().splitlines()
        os.makedirs('out')
        open('out/count.txt', 'w').write(str(len(rows)))
        open('notes.txt', 'a').write(' and more')
        os.symlink('/etc/passwd', 'passwd-link')
        os.mkfifo('pipe')
    """
    files = {"data/in.csv": b"a,b\n1,2\n", "notes.txt": b"kept", "same.txt": b"same"}
    result = await python(sandbox, code, files=files)
    assert result.exit_code == 0, result.stderr
    assert result.files == {"out/count.txt": b"2", "notes.txt": b"kept and more"}


async def test_a_file_name_out_of_the_work_directory_is_refused(
    client: docker.DockerClient, tmp_path: Path
) -> None:
    sandbox = DockerSandbox(client, image=IMAGE, root=tmp_path)
    for name in ("../escape.txt", "/etc/escape.txt", "a/../../b", ""):
        with pytest.raises(BadFileName):
            await python(sandbox, "print(1)", files={name: b"x"})
    assert list(tmp_path.iterdir()) == []
    assert not (tmp_path.parent / "escape.txt").exists()


async def test_filling_the_work_directory_ends_the_run(
    client: docker.DockerClient, tmp_path: Path
) -> None:
    sandbox = DockerSandbox(client, image=IMAGE, root=tmp_path, work_bytes=8 * 1024 * 1024)
    code = """
        import itertools
        block = b'x' * 1024 * 1024
        for n in itertools.count():
            open(f'fill-{n}.bin', 'wb').write(block)
    """
    result = await python(sandbox, code)
    assert (result.limit, result.exit_code) == ("file_size", -9), result.stderr
    assert list(tmp_path.iterdir()) == []


async def test_the_host_environment_is_not_visible(
    sandbox: DockerSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = f"secret-{uuid.uuid4().hex}"
    monkeypatch.setenv("TOKENDANCE_TEST_SECRET", secret)
    code = """
        import os, glob
        print(sorted(os.environ.items()))
        for path in glob.glob('/proc/*/environ'):
            try:
                print(open(path, 'rb').read())
            except OSError:
                pass
    """
    result = await python(sandbox, code)
    assert result.exit_code == 0, result.stderr
    assert "PATH" in result.stdout
    assert secret not in result.stdout and "TOKENDANCE_TEST_SECRET" not in result.stdout


async def test_no_network_reaches_the_host_or_names(sandbox: DockerSandbox) -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        listener.setblocking(False)
        code = f"""
            import os, socket
            print('interfaces', sorted(os.listdir('/sys/class/net')))
            for host in ('127.0.0.1', '::1', '169.254.169.254'):
                try:
                    socket.create_connection((host, {port}), timeout=3)
                    print('connected', host)
                except OSError as e:
                    print('refused', host, type(e).__name__)
            try:
                socket.getaddrinfo('pypi.org', 443)
                print('resolved')
            except OSError as e:
                print('no dns', type(e).__name__)
        """
        result = await python(sandbox, code)
        with pytest.raises(BlockingIOError):
            listener.accept()
    assert result.exit_code == 0, result.stderr
    assert "interfaces ['lo']" in result.stdout
    assert "connected" not in result.stdout and "resolved" not in result.stdout
    assert result.stdout.count("refused") == 3 and "no dns gaierror" in result.stdout


async def test_only_the_work_directory_and_tmp_are_writable(sandbox: DockerSandbox) -> None:
    limits = SandboxLimits(wall_seconds=20.0, tmp_bytes=1024 * 1024)
    code = """
        import errno
        for path in ('/x', '/etc/x', '/usr/lib/x', '/work/x', '/tmp/x'):
            try:
                open(path, 'w').write('x')
                print(path, 'written')
            except OSError as e:
                print(path, errno.errorcode[e.errno])
        try:
            open('/tmp/big', 'wb').write(b'x' * 2 * 1024 * 1024)
        except OSError as e:
            print('/tmp/big', errno.errorcode[e.errno])
    """
    result = await python(sandbox, code, limits=limits)
    lines = set(result.stdout.splitlines())
    assert {"/x EROFS", "/etc/x EROFS", "/usr/lib/x EROFS"} <= lines, result.stdout
    assert {"/work/x written", "/tmp/x written", "/tmp/big ENOSPC"} <= lines, result.stdout
    assert result.files == {"x": b"x"}


async def test_sleeping_past_the_wall_clock_is_killed(
    sandbox: DockerSandbox, client: docker.DockerClient
) -> None:
    limits = SandboxLimits(wall_seconds=3.0)
    result = await python(
        sandbox, "import time; print('started', flush=True); time.sleep(120)", limits=limits
    )
    assert (result.limit, result.exit_code, result.stdout) == ("wall_time", -9, "started\n")
    assert sandbox_containers(client) == []


async def test_concurrent_runs_each_see_their_own_files_and_meet_their_wall_clock(
    sandbox: DockerSandbox,
) -> None:
    # More runs than the event loop's default executor has threads (it has cores + 4).
    count = min(32, (os.cpu_count() or 1) + 4) + 2
    code = "import os, time; print(sorted(os.listdir('.')), flush=True); time.sleep(120)"
    runs = [
        python(sandbox, code, limits=SandboxLimits(wall_seconds=3.0), files={f"own-{n}": b""})
        for n in range(count)
    ]
    results = await asyncio.gather(*runs)
    assert [r.stdout for r in results] == [f"['own-{n}']\n" for n in range(count)]
    assert {r.limit for r in results} == {"wall_time"}


async def test_a_run_given_up_by_its_caller_leaves_nothing_behind(
    client: docker.DockerClient, tmp_path: Path
) -> None:
    sandbox = DockerSandbox(client, image=IMAGE, root=tmp_path)
    code = "import time; print('started', flush=True); time.sleep(120)"
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(python(sandbox, code), timeout=3)
    assert sandbox_containers(client) == []
    assert list(tmp_path.iterdir()) == []


async def test_a_memory_bomb_is_killed_at_the_memory_limit(sandbox: DockerSandbox) -> None:
    limits = SandboxLimits(wall_seconds=30.0, memory_bytes=128 * 1024 * 1024)
    code = """
        chunks = []
        while True:
            chunks.append(b'x' * (16 * 1024 * 1024))
    """
    result = await python(sandbox, code, limits=limits)
    assert (result.limit, result.exit_code) == ("memory", -9), result.stderr


async def test_a_fork_bomb_stops_at_the_process_limit(
    sandbox: DockerSandbox, client: docker.DockerClient
) -> None:
    marker = f"bomb-{uuid.uuid4().hex}"
    limits = SandboxLimits(wall_seconds=5.0, processes=16)
    code = """
        import errno, os, time
        forked = 0
        try:
            while forked < 1000:
                if os.fork() == 0:
                    time.sleep(60)
                    os._exit(0)
                forked += 1
        except OSError as e:
            print('stopped after', forked, errno.errorcode[e.errno], flush=True)
        while True:
            try:
                os.fork()
            except OSError:
                time.sleep(0.01)
    """
    result = await python(sandbox, code, limits=limits, args=(marker,))
    stopped = result.stdout.split()
    assert stopped[:2] == ["stopped", "after"] and stopped[3] == "EAGAIN", result.stdout
    assert int(stopped[2]) < 16
    assert result.limit == "wall_time"
    assert sandbox_containers(client) == []
    assert [
        p.pid for p in psutil.process_iter(["cmdline"]) if marker in (p.info["cmdline"] or [])
    ] == []


async def test_output_past_the_cap_is_cut_and_far_past_it_ends_the_run(
    sandbox: DockerSandbox,
) -> None:
    limits = SandboxLimits(wall_seconds=30.0, output_bytes=1000)
    cut = await python(sandbox, "print('a' * 2500, end='')", limits=limits)
    assert (cut.stdout, cut.stdout_truncated, cut.limit) == ("a" * 1000, True, None)
    assert (cut.stderr, cut.stderr_truncated) == ("", False)
    flood = "import sys\nwhile True:\n    sys.stderr.write('b' * 65536)"
    flooded = await python(sandbox, flood, limits=limits)
    assert (flooded.stderr, flooded.stderr_truncated) == ("b" * 1000, True)
    assert (flooded.limit, flooded.exit_code) == ("output", -9)


async def test_cpu_spin_ends_at_the_cpu_time_limit(sandbox: DockerSandbox) -> None:
    limits = SandboxLimits(wall_seconds=30.0, cpu_seconds=1)
    result = await python(sandbox, "while True:\n    pass", limits=limits)
    assert (result.limit, result.exit_code) == ("cpu_time", -24)


async def test_a_file_past_the_size_limit_is_refused(sandbox: DockerSandbox) -> None:
    limits = SandboxLimits(wall_seconds=20.0, file_bytes=1024 * 1024)
    code = "open('big.bin', 'wb').write(b'x' * 2 * 1024 * 1024)"
    result = await python(sandbox, code, limits=limits)
    assert result.limit == "file_size" and result.exit_code == 1, result.stderr
    assert len(result.files["big.bin"]) <= 1024 * 1024


async def test_numpy_pandas_and_matplotlib_draw_a_png(sandbox: DockerSandbox) -> None:
    code = """
        import numpy as np, pandas as pd, matplotlib.pyplot as plt
        frame = pd.DataFrame({'x': np.arange(10), 'y': np.arange(10) ** 2})
        frame.plot(x='x', y='y')
        plt.savefig('plot.png')
        print(int(frame['y'].sum()))
    """
    result = await python(sandbox, code)
    assert (result.stdout, result.exit_code) == ("285\n", 0), result.stderr
    assert list(result.files) == ["plot.png"]
    assert result.files["plot.png"].startswith(b"\x89PNG\r\n\x1a\n")


async def test_a_missing_image_says_how_to_build_it(client: docker.DockerClient) -> None:
    missing = DockerSandbox(client, image="tokendance-sandbox:no-such-tag")
    with pytest.raises(SandboxUnavailable, match=r"sandbox/build_image\.sh"):
        await missing.run(SandboxRun(("true",)))


async def test_no_engine_says_how_to_start_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    with pytest.raises(SandboxUnavailable, match=r"podman_service\.sh") as raised:
        await DockerSandbox().run(SandboxRun(("true",)))
    assert raised.value.code == "SANDBOX_UNAVAILABLE"


async def resolve_test_domains(host: str, port: int) -> list[str]:
    """*.test names are this machine's loopback, where the fake upstream listens."""
    return ["127.0.0.1"] if host.endswith(".test") else []


async def test_allowed_domains_are_reached_through_the_proxy_and_nothing_else(
    client: docker.DockerClient,
) -> None:
    asked: list[str] = []

    async def upstream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        asked.append((await reader.readline()).decode().strip())
        writer.write(b"HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(upstream, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    code = f"""
import socket, urllib.request
for host in ('allowed.test', 'other.test'):
    try:
        print(host, urllib.request.urlopen(f'http://{{host}}:{port}/x', timeout=10).read())
    except OSError as e:
        print(host, 'refused', e)
try:
    socket.create_connection(('127.0.0.1', {port}), timeout=3)
    print('direct connected')
except OSError:
    print('direct refused')
"""
    sandbox = DockerSandbox(client, image=IMAGE, resolve=resolve_test_domains)
    run = SandboxRun(
        ("python3", "-I", "-"), stdin=code.encode(), limits=FAST, allow_domains=("allowed.test",)
    )
    async with server:
        result = await sandbox.run(run)
    lines = result.stdout.splitlines()
    assert lines[0] == "allowed.test b'hello'", result.stdout + result.stderr
    assert lines[1].startswith("other.test refused HTTP Error 403")
    assert lines[2] == "direct refused"
    assert asked == ["GET /x HTTP/1.1"]
