"""A fork server for the `tokendance` processes the tests start: `spawn(args, env)`.

Every e2e test starts at least one `tokendance serve`, and each of those spent about
three of its four to five seconds of start importing the same modules. This server
imports them once (`PRELOAD`), then forks a child per request, which sets the
environment, the working directory and the standard streams it was sent, and runs
`adapters.cli.main` as `python -m adapters.cli` would, then exits as the interpreter
does (threads joined, `atexit` run), but without tearing down every module and object
(`_run_and_exit`). The child is a real process of its own: it is signalled by pid, its
own children are its own, and its exit code is the one `subprocess.Popen` would report
(negative for a signal). `Forked` is the
`Popen`-shaped handle a test holds.

One fork server per test process (each xdist worker has its own), started on the first
`spawn` and ended when that process ends (it reads its standard input until EOF).
`TOKENDANCE_TEST_NO_FORK=1` starts every process with `subprocess.Popen` instead.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

# What `serve` and the other roles import on their way to answering: once, here.
PRELOAD = (
    "adapters.cli",
    "adapters.commands.cli_commands",
    "adapters.http.server",
    "adapters.http.app",
    "adapters.bootstrap.roles",
    "adapters.llm.anthropic",  # the SDKs: seconds each, imported on a model's first use
    "adapters.llm.openai",
    "adapters.llm.gemini",
    "adapters.mcp.server",
    "adapters.mcp.client",
    "wordllama",
    # Imported on the way to serving (by litestar, httpx, uvicorn, anyio): ~80 ms a start.
    "anyio._backends._asyncio",
    "httpcore2",
    "litestar._kwargs",
    "litestar.plugins.pydantic",
    "swagger_ui",
    "uvicorn.protocols.http.auto",
    "uvicorn.protocols.websockets.auto",
    "uvloop",
)
ROOT = Path(__file__).resolve().parent.parent
CLI = ROOT / "adapters" / "cli.py"
MESSAGE = 1 << 20  # a request: the arguments, the environment, the working directory


class Forked:
    """A process the fork server started: `subprocess.Popen`'s pid, poll, wait,
    returncode, send_signal, terminate and kill."""

    def __init__(self, args: Sequence[str], pid: int, conn: socket.socket) -> None:
        self.args, self.pid, self._conn = list(args), pid, conn
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self._conn], [], [], 0)[0]:
            self._exited()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if not select.select([self._conn], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            self._exited()
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def _exited(self) -> None:
        answer = self._conn.recv(MESSAGE)
        self._conn.close()
        if not answer:
            raise RuntimeError(f"the fork server went away before pid {self.pid} exited")
        self.returncode = int(json.loads(answer)["returncode"])


Process = Forked | subprocess.Popen[bytes]

_server: tuple[subprocess.Popen[bytes], str] | None = None
_server_lock = threading.Lock()


def spawn(
    args: Sequence[str],
    env: Mapping[str, str],
    *,
    stdout: IO[bytes] | int | None = None,
    stderr: IO[bytes] | int | None = None,
    cwd: Path | None = None,
) -> Process:
    """`python -m adapters.cli *args` with that environment, as `subprocess.Popen` would
    start it (stdout/stderr: a file, `subprocess.DEVNULL`, or None for this process's)."""
    if os.environ.get("TOKENDANCE_TEST_NO_FORK") == "1":
        command = [sys.executable, "-m", "adapters.cli", *args]
        return subprocess.Popen(command, env=dict(env), stdout=stdout, stderr=stderr, cwd=cwd)
    path = _fork_server()
    with open(os.devnull, "rb+") as null:
        fds = [null.fileno(), _fd(stdout, null, 1), _fd(stderr, null, 2)]
        request = {"args": list(args), "env": dict(env), "cwd": str(cwd or Path.cwd())}
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        conn.connect(path)
        socket.send_fds(conn, [json.dumps(request).encode()], fds)
    answer = conn.recv(MESSAGE)
    if not answer:
        raise RuntimeError(f"the fork server did not start {args}: see {path}.log")
    return Forked(args, int(json.loads(answer)["pid"]), conn)


def _fd(stream: IO[bytes] | int | None, null: IO[bytes], default: int) -> int:
    if stream is None:
        return default
    if stream == subprocess.DEVNULL:
        return null.fileno()
    if isinstance(stream, int):
        return stream
    return stream.fileno()


def _fork_server() -> str:
    global _server
    with _server_lock:
        if _server is None or _server[0].poll() is not None:
            path = os.path.join(tempfile.mkdtemp(prefix="tokendance-forks-"), "socket")
            with open(f"{path}.log", "wb") as log:
                process = subprocess.Popen(
                    [sys.executable, "-m", "tests.fork_server", path],
                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, cwd=ROOT,
                )  # fmt: skip
            assert process.stdout is not None
            if process.stdout.readline() != b"ready\n":
                raise RuntimeError(f"the fork server did not start: see {path}.log")
            _server = (process, path)
        return _server[1]


# -- the fork server's side ----------------------------------------------------------


def _serve(path: str) -> dict[str, object]:
    """Fork a child per request until standard input ends; returns only in a child."""
    for module in PRELOAD:
        importlib.import_module(module)
    if threading.active_count() != 1:  # a fork copies no thread: none may run yet
        raise RuntimeError(f"preloading started threads: {threading.enumerate()}")
    # What was imported stays for good: the children's collections of cycles skip it,
    # rather than walk the whole shared heap (copying every page they touch).
    gc.collect()
    gc.freeze()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(64)
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_write, False)
    signal.set_wakeup_fd(wake_write)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children: dict[int, socket.socket] = {}
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        ready = select.select([listener, wake_read, sys.stdin], [], [])[0]
        if sys.stdin in ready and not os.read(sys.stdin.fileno(), 1024):
            for pid in children:  # the tests' process ended: so do the servers it left
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            os._exit(0)
        if wake_read in ready:
            os.read(wake_read, 1024)
            _reap(children)
        if listener in ready:
            conn, _ = listener.accept()
            message, fds, _flags, _addr = socket.recv_fds(conn, MESSAGE, 3)
            pid = os.fork()
            if pid == 0:  # the child: it leaves the loop with its request
                for sock in [listener, *children.values()]:
                    sock.close()
                signal.set_wakeup_fd(-1)
                signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                os.close(wake_read)
                os.close(wake_write)
                for target, fd in enumerate(fds):
                    os.dup2(fd, target)
                    os.close(fd)
                conn.close()
                request: dict[str, object] = json.loads(message)
                return request
            for fd in fds:
                os.close(fd)
            conn.send(json.dumps({"pid": pid}).encode())
            children[pid] = conn


def _reap(children: dict[int, socket.socket]) -> None:
    while children:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            return
        conn = children.pop(pid, None)
        if conn is not None:
            returncode = os.waitstatus_to_exitcode(status)
            with contextlib.suppress(OSError):  # the test that held it may be gone
                conn.send(json.dumps({"returncode": returncode}).encode())
            conn.close()


def _run(request: dict[str, object]) -> None:
    """In the child: `python -m adapters.cli *args` with the request's environment."""
    env, args, cwd = request["env"], request["args"], request["cwd"]
    assert isinstance(env, dict) and isinstance(args, list) and isinstance(cwd, str)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)  # sys.stdin, stdout and stderr write to descriptors 0-2, now the request's
    sys.argv = [str(CLI), *args]
    from adapters.cli import main

    main(args)


def _run_and_exit(request: dict[str, object]) -> None:
    """`_run`, then exit as the interpreter does, but for its teardown of every module
    and object: in a forked child that touches the whole heap it shares with the fork
    server, copying it page by page (a second of each server's stop, measured). Threads
    are joined and `atexit` run first, as the interpreter's exit does them; an uncaught
    exception (a traceback to print, an interrupt to re-raise) takes the usual way."""
    try:
        _run(request)
        code = 0
    except SystemExit as e:
        if e.code is not None and not isinstance(e.code, int):
            raise  # a message to print: the interpreter prints it
        code = e.code or 0
    threading._shutdown()  # type: ignore[attr-defined]  # what the exit calls first
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


if __name__ == "__main__":
    _run_and_exit(_serve(sys.argv[1]))
