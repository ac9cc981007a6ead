"""The escape suite: one small payload per way out, each contained, the host unchanged.

Every payload tries for real and prints `ESCAPED` if it got through; the tests also
check that each attempt ran (a payload that never tried proves nothing).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import socket
import stat
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import psutil
import pytest

from sandbox.bubblewrap import BubblewrapSandbox
from tests.sandbox.conftest import needs_bwrap, run_python

pytestmark = needs_bwrap

REPOSITORY = Path(__file__).resolve().parents[2]

ATTEMPT = """
import ctypes, os, socket, subprocess, sys
def attempt(label, fn):
    try:
        print(label, "ESCAPED", repr(fn())[:300])
    except Exception as e:
        print(label, "blocked", type(e).__name__, e)
"""


def assert_contained(stdout: str, labels: list[str]) -> None:
    for label in labels:
        assert f"{label} blocked" in stdout, f"{label} did not run:\n{stdout}"
    assert "ESCAPED" not in stdout, stdout


@pytest.fixture
def data_dir(tmp_path: Path) -> Iterator[Path]:
    """A stand-in for the server's data directory, with a secret; unchanged after."""
    secret = tmp_path / "secret.txt"
    secret.write_text("the server's secret")
    before = sorted(p.name for p in tmp_path.iterdir())
    yield tmp_path
    assert secret.read_text() == "the server's secret"
    assert sorted(p.name for p in tmp_path.iterdir()) == before


async def test_server_environment_is_not_visible(
    sandbox: BubblewrapSandbox, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = secrets.token_hex(16)
    monkeypatch.setenv("TOKENDANCE_TEST_SECRET", secret)
    code = """
import glob, os
print(dict(os.environ))
for path in glob.glob("/proc/*/environ"):
    try:
        print(path, open(path, "rb").read())
    except OSError as e:
        print(path, "unreadable", e)
"""
    result = await run_python(sandbox, code)
    assert result.exit_code == 0, result.stderr
    assert "/proc/self/environ b'PATH=" in result.stdout  # it did read what it could
    assert "/proc/1/environ" in result.stdout  # bubblewrap's own process, too
    assert secret not in result.stdout


@pytest.fixture
async def host_listeners() -> AsyncIterator[tuple[dict[str, int], list[str]]]:
    """TCP listeners on the host's 127.0.0.1 and ::1; the list records connections."""
    seen: list[str] = []

    async def note(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        seen.append(str(writer.get_extra_info("peername")))
        writer.close()

    v4 = await asyncio.start_server(note, "127.0.0.1", 0)
    v6 = await asyncio.start_server(note, "::1", 0, family=socket.AF_INET6)
    ports = {
        "v4": v4.sockets[0].getsockname()[1],
        "v6": v6.sockets[0].getsockname()[1],
    }
    yield ports, seen
    for server in (v4, v6):
        server.close()
        await server.wait_closed()


async def test_no_network_at_all(
    sandbox: BubblewrapSandbox, host_listeners: tuple[dict[str, int], list[str]]
) -> None:
    ports, seen = host_listeners
    code = (
        ATTEMPT
        + f"""
attempt("loopback", lambda: socket.create_connection(("127.0.0.1", {ports["v4"]}), timeout=2))
attempt("ipv6", lambda: socket.create_connection(("::1", {ports["v6"]}), timeout=2))
attempt("metadata", lambda: socket.create_connection(("169.254.169.254", 80), timeout=2))
attempt("dns", lambda: socket.getaddrinfo("example.com", 443))
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
attempt("udp", lambda: udp.sendto(b"x", ("1.1.1.1", 53)))
attempt("public", lambda: socket.create_connection(("1.1.1.1", 443), timeout=2))
"""
    )
    result = await run_python(sandbox, code)
    assert_contained(result.stdout, ["loopback", "ipv6", "metadata", "dns", "udp", "public"])
    assert seen == []


async def test_host_unix_sockets_are_out_of_reach(
    sandbox: BubblewrapSandbox, data_dir: Path
) -> None:
    seen: list[str] = []

    def note(conn: socket.socket) -> None:
        seen.append("connected")

    path = str(data_dir / "server.sock")
    abstract = f"\0tokendance-test-{secrets.token_hex(4)}"
    servers = []
    for address in (path, abstract):
        server = socket.socket(socket.AF_UNIX)
        server.bind(address)
        server.listen()
        server.setblocking(False)
        servers.append(server)
    code = (
        ATTEMPT
        + f"""
def connect(address):
    s = socket.socket(socket.AF_UNIX)
    s.connect(address)
    return s
attempt("path", lambda: connect({path!r}))
attempt("abstract", lambda: connect({abstract!r}))
"""
    )
    try:
        result = await run_python(sandbox, code)
        for server in servers:
            with pytest.raises(BlockingIOError):
                server.accept()
    finally:
        for server in servers:
            server.close()
        os.unlink(path)
    assert_contained(result.stdout, ["path", "abstract"])


async def test_host_files_are_not_readable(sandbox: BubblewrapSandbox, data_dir: Path) -> None:
    code = (
        ATTEMPT
        + f"""
attempt("shadow", lambda: open("/etc/shadow").read())
attempt("passwd", lambda: open("/etc/passwd").read())
attempt("data", lambda: open({str(data_dir / "secret.txt")!r}).read())
attempt("data_list", lambda: os.listdir({str(data_dir)!r}))
attempt("repository", lambda: open({str(REPOSITORY / "pyproject.toml")!r}).read())
attempt("repo_code", lambda: open({str(REPOSITORY / "sandbox" / "bubblewrap.py")!r}).read())
attempt("root_home", lambda: os.listdir("/root/.ssh"))
print("repository holds", sorted(os.listdir({str(REPOSITORY)!r}))
           if os.path.isdir({str(REPOSITORY)!r}) else "nothing")
"""
    )
    result = await run_python(sandbox, code)
    labels = ["shadow", "passwd", "data", "data_list", "repository", "repo_code", "root_home"]
    assert_contained(result.stdout, labels)
    listing = result.stdout.splitlines()[-1]
    assert listing.startswith("repository holds") and "pyproject.toml" not in listing


async def test_writes_outside_the_work_directory_fail(
    sandbox: BubblewrapSandbox, data_dir: Path
) -> None:
    secret = str(data_dir / "secret.txt")
    code = (
        ATTEMPT
        + f"""
def write(path):
    with open(path, "w") as f:
        f.write("pwned")
attempt("root", lambda: write("/pwned"))
attempt("usr", lambda: write("/usr/pwned"))
attempt("etc", lambda: write("/etc/ssl/certs/pwned"))
attempt("interpreter", lambda: write(os.path.join(sys.base_prefix, "pwned")))
attempt("venv", lambda: write(os.path.join(sys.prefix, "pwned")))
attempt("dotdot", lambda: write("../pwned"))
attempt("dev", lambda: write("/dev/pwned"))
attempt("data", lambda: write({secret!r}))
os.symlink({secret!r}, "link")
attempt("symlink", lambda: write("link"))
os.symlink("/usr/bin", "bin_link")
attempt("symlink_dir", lambda: write("bin_link/pwned"))
attempt("hardlink", lambda: os.link("/usr/bin/env", "hard"))
attempt("hardlink_tmp", lambda: (write("/tmp/t"), os.link("/tmp/t", "hard2")))
"""
    )
    result = await run_python(sandbox, code)
    labels = ["root", "usr", "etc", "interpreter", "venv", "dotdot", "dev", "data", "symlink"]
    assert_contained(result.stdout, [*labels, "symlink_dir", "hardlink", "hardlink_tmp"])
    # The link is left out of what comes back, and the host never followed it.
    assert "link" not in result.files
    for path in (Path("/pwned"), Path("/usr/pwned"), Path("/usr/bin/pwned")):
        assert not path.exists()


async def test_device_nodes_cannot_be_made(sandbox: BubblewrapSandbox) -> None:
    disk = os.stat("/").st_dev
    code = (
        ATTEMPT
        + f"""
import stat
attempt("null", lambda: os.mknod("null", stat.S_IFCHR | 0o666, os.makedev(1, 3)))
attempt("disk", lambda: os.mknod("disk", stat.S_IFBLK | 0o666, {disk}))
attempt("mem", lambda: os.mknod("/tmp/mem", stat.S_IFCHR | 0o666, os.makedev(1, 1)))
"""
    )
    result = await run_python(sandbox, code)
    assert_contained(result.stdout, ["null", "disk", "mem"])


async def test_setuid_binaries_give_no_privilege(sandbox: BubblewrapSandbox) -> None:
    su = "/usr/bin/su"
    if not os.path.exists(su) or not os.stat(su).st_mode & stat.S_ISUID:
        pytest.skip("no setuid su here to try")
    code = (
        ATTEMPT
        + f"""
def su():
    out = subprocess.run([{su!r}, "-c", "id -u", "root"], capture_output=True, text=True,
                         stdin=subprocess.DEVNULL, timeout=5)
    if out.stdout.strip() == "0":
        return out.stdout
    raise PermissionError(out.stderr.strip() or out.returncode)
attempt("su", su)
attempt("mount", lambda: subprocess.run(["/usr/bin/mount", "-t", "tmpfs", "t", "/tmp"],
                                        check=True, capture_output=True))
print([line for line in open("/proc/self/status") if line.startswith("NoNewPrivs")])
"""
    )
    result = await run_python(sandbox, code)
    assert_contained(result.stdout, ["su", "mount"])
    assert "NoNewPrivs:\\t1" in result.stdout


async def test_nested_user_namespaces_are_refused(sandbox: BubblewrapSandbox) -> None:
    code = (
        ATTEMPT
        + """
libc = ctypes.CDLL(None, use_errno=True)
def unshare(flags):
    if libc.unshare(flags) != 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
attempt("user", lambda: unshare(0x10000000))
attempt("mount_ns", lambda: unshare(0x00020000))
attempt("net_ns", lambda: unshare(0x40000000))
attempt("tool", lambda: subprocess.run(["unshare", "-U", "-r", "id"], check=True,
                                       capture_output=True))
"""
    )
    result = await run_python(sandbox, code)
    assert_contained(result.stdout, ["user", "mount_ns", "net_ns", "tool"])


async def test_ptrace_and_reading_other_processes_are_refused(
    sandbox: BubblewrapSandbox,
) -> None:
    code = (
        ATTEMPT
        + """
import time
libc = ctypes.CDLL(None, use_errno=True)
def check(ret):
    if ret == -1:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return ret
child = os.fork()
if child == 0:
    time.sleep(5)
    os._exit(0)
PTRACE_ATTACH = 16
attempt("attach", lambda: check(libc.ptrace(PTRACE_ATTACH, child, 0, 0)))
class IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
buf = ctypes.create_string_buffer(8)
local = IoVec(ctypes.cast(buf, ctypes.c_void_p), 8)
remote = IoVec(ctypes.cast(buf, ctypes.c_void_p), 8)
attempt("vm_read", lambda: check(libc.process_vm_readv(child, ctypes.byref(local), 1,
                                                        ctypes.byref(remote), 1, 0)))
SYS_keyctl, SYS_bpf, SYS_userfaultfd, SYS_perf_event_open = 250, 321, 323, 298
attempt("keyctl", lambda: check(libc.syscall(SYS_keyctl, 0, -3, 0)))
attempt("bpf", lambda: check(libc.syscall(SYS_bpf, 0, 0, 0)))
attempt("userfaultfd", lambda: check(libc.syscall(SYS_userfaultfd, 0)))
attempt("perf", lambda: check(libc.syscall(SYS_perf_event_open, 0, 0, -1, -1, 0)))
os.kill(child, 9)
"""
    )
    result = await run_python(sandbox, code)
    assert_contained(result.stdout, ["attach", "vm_read", "keyctl", "bpf", "userfaultfd", "perf"])
    assert "Operation not permitted" in result.stdout  # the filter's EPERM, not a crash


def sandbox_processes(sandbox: BubblewrapSandbox, marker: str | None = None) -> list[str]:
    """Live host processes of a run: of a run uid, or carrying `marker`. Zombies are
    dead: bubblewrap leaves its init for the host's init to reap (this machine's init
    does that late, if ever)."""
    pool = range(sandbox.uids.base, sandbox.uids.base + sandbox.uids.count)
    found = []
    for proc in psutil.process_iter(["uids", "cmdline", "status"]):
        if proc.info["status"] == psutil.STATUS_ZOMBIE:
            continue
        uids, cmdline = proc.info["uids"], " ".join(proc.info["cmdline"] or ())
        if (uids and os.geteuid() == 0 and uids.real in pool) or (marker and marker in cmdline):
            found.append(f"{proc.pid} {cmdline}")
    return found


async def test_a_background_process_does_not_outlive_its_run(
    sandbox: BubblewrapSandbox,
) -> None:
    marker = f"tokendance-leftover-{secrets.token_hex(4)}"
    code = f"""
import os, subprocess
subprocess.Popen([{marker!r}, "300"], executable="/usr/bin/sleep", start_new_session=True)
if os.fork() == 0:  # a daemon, twice removed
    os.setsid()
    if os.fork() == 0:
        os.execv("/usr/bin/sleep", [{marker!r}, "301"])
    os._exit(0)
print("left", len([p for p in os.listdir("/proc") if p.isdigit()]), "processes running")
"""
    result = await run_python(sandbox, code)
    assert result.exit_code == 0, result.stderr
    assert "processes running" in result.stdout
    assert sandbox_processes(sandbox, marker) == []


async def test_fork_bomb_hits_the_process_limit(sandbox: BubblewrapSandbox) -> None:
    code = "import os\nwhile True:\n    os.fork()\n"
    result = await run_python(sandbox, code, processes=16, wall_seconds=20)
    assert result.limit == "processes", (result.limit, result.stderr[-500:])
    assert sandbox_processes(sandbox) == []
