"""The bubblewrap command line of one run: what the sandbox sees and how it starts."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from sandbox.limits import prlimit_argv
from sandbox.python import PythonRuntime
from schemas.sandbox import SandboxLimits

WORK_DIR = "/workspace"  # the code's cwd and HOME (not /work: a venv may live there)
PROXY_SOCKET = "/run/proxy.sock"
PROXY_PORT = 3128
SANDBOX_UID = 1000  # inside; outside it is the run's own unprivileged host uid
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# Public pieces of /etc: CA certificates (HTTPS through the proxy), font configuration.
PUBLIC_ETC = ("/etc/ssl/certs", "/etc/fonts")
PASSED_ON = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")  # a CPU quirk, never a secret

# Inside the sandbox, before the code: a bridge from the loopback port the proxy
# variables name to the host proxy's unix socket, then the code once it listens.
_BRIDGE = f"""
{{socat}} TCP-LISTEN:{PROXY_PORT},bind=127.0.0.1,fork,reuseaddr UNIX-CONNECT:{PROXY_SOCKET} &
i=0
while ! grep -q ': 0100007F:{PROXY_PORT:04X} 00000000:0000 0A' /proc/net/tcp; do
  i=$((i + 1)); [ $i -gt 500 ] && break; sleep 0.01
done
exec "$@"
"""


@dataclass(frozen=True)
class RunPaths:
    """Host paths of one run."""

    work: str
    proxy_socket: str | None  # None: no network at all


def environment(runtime: PythonRuntime, proxied: bool) -> dict[str, str]:
    """The code's whole environment: nothing of the server's."""
    env = {
        "PATH": f"{os.path.dirname(runtime.executable)}:/usr/local/bin:/usr/bin:/bin",
        "HOME": WORK_DIR,
        "LANG": "C.UTF-8",
        "TMPDIR": "/tmp",
        "MPLBACKEND": "Agg",
        # Caches and configuration in /tmp, so they never come back as files written.
        "MPLCONFIGDIR": "/tmp/.config/matplotlib",
        "XDG_CACHE_HOME": "/tmp/.cache",
        "XDG_CONFIG_HOME": "/tmp/.config",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    env.update({k: os.environ[k] for k in PASSED_ON if k in os.environ})
    if proxied:
        url = f"http://127.0.0.1:{PROXY_PORT}"
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
            env[name] = url
    return env


def sandbox_argv(
    bwrap: str,
    runtime: PythonRuntime,
    limits: SandboxLimits,
    paths: RunPaths,
    fds: Mapping[str, int],
    argv: Sequence[str],
    socat: str = "/usr/bin/socat",
) -> list[str]:
    """bubblewrap running `argv` in the sandbox; `fds` holds the open descriptors of
    the seccomp filter ("seccomp") and of bubblewrap's status reports ("status")."""
    proxied = paths.proxy_socket is not None
    cmd = [bwrap, "--unshare-all", "--unshare-user", "--disable-userns"]
    cmd += ["--die-with-parent", "--new-session", "--hostname", "sandbox"]
    cmd += ["--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
    cmd += _system_mounts()
    cmd += ["--proc", "/proc", "--dev", "/dev"]
    for tmp in ("/dev/shm", "/tmp"):
        cmd += ["--size", str(limits.tmp_bytes), "--perms", "1777", "--tmpfs", tmp]
    for path in runtime.paths:
        cmd += ["--ro-bind", path, path]
    cmd += ["--bind", paths.work, WORK_DIR, "--chdir", WORK_DIR]
    if paths.proxy_socket is not None:
        cmd += ["--bind", paths.proxy_socket, PROXY_SOCKET]
    # bubblewrap's tmpfs root and /dev are the code's to write otherwise (memory!).
    cmd += ["--remount-ro", "/dev", "--remount-ro", "/"]
    cmd += ["--clearenv"]
    for name, value in environment(runtime, proxied).items():
        cmd += ["--setenv", name, value]
    cmd += ["--seccomp", str(fds["seccomp"]), "--json-status-fd", str(fds["status"])]
    cmd += ["--", *prlimit_argv(limits, helpers=2 if proxied else 0)]
    if proxied:
        cmd += ["/bin/sh", "-c", _BRIDGE.format(socat=socat), "sh"]
    return [*cmd, *argv]


def probe_argv(bwrap: str) -> list[str]:
    """The smallest sandbox: does bubblewrap work here at all?"""
    return [bwrap, "--unshare-all", "--unshare-user", "--disable-userns", *_system_mounts(), "true"]


def _system_mounts() -> list[str]:
    args: list[str] = []
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for path in PUBLIC_ETC:
        if os.path.isdir(path):
            args += ["--ro-bind", path, path]
    return args


def setpriv_argv(uid: int) -> list[str]:
    """setpriv running what follows as `uid` (and its own gid), with no other groups."""
    return ["/usr/bin/setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--"]


def blocked_ancestor(path: str) -> str | None:
    """The outermost directory above `path` that others may not enter (say /root),
    which an unprivileged uid could not bind from."""
    current = "/"
    for part in os.path.realpath(path).strip("/").split("/")[:-1]:
        current = os.path.join(current, part)
        if not os.stat(current).st_mode & 0o001:
            return current
    return None


def reach_argv(bwrap: str, sources: Sequence[tuple[str, bool]]) -> list[str]:
    """For a root server: a bubblewrap (as root, no user namespace) that gives the
    sandbox's bind sources (path, writable) that sit under a closed directory a way
    in, by covering that directory with an empty tmpfs holding just them. Empty when
    no source needs it."""
    blocked = {p: a for p, _ in sources if (a := blocked_ancestor(p)) is not None}
    if not blocked:
        return []
    cmd = [bwrap, "--dev-bind", "/", "/", "--die-with-parent"]
    for top in sorted(set(blocked.values())):
        cmd += ["--perms", "0755", "--tmpfs", top]
    for path, writable in sources:
        if path not in blocked:
            continue
        parent = os.path.dirname(path)
        steps = os.path.relpath(parent, blocked[path]).split("/")
        for i in range(1, len(steps) + 1):
            if steps[0] != ".":
                cmd += ["--perms", "0755", "--dir", os.path.join(blocked[path], *steps[:i])]
        cmd += ["--bind" if writable else "--ro-bind", path, path]
    return [*cmd, "--"]
