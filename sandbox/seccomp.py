"""The seccomp filter sandboxed code runs under, built by the system's libseccomp.

Everything is allowed but what could reach past the sandbox's namespaces: tracing or
reading other processes, the kernel keyring, BPF, perf, userfaultfd (a classic
exploit helper), new namespaces and mounts, modules, kexec, io_uring (its own
syscall surface, outside the filter). Denied calls fail with EPERM, so the code sees
an ordinary error. libseccomp's default for a foreign architecture (32-bit syscalls
through int 0x80) is to kill the process.
"""

from __future__ import annotations

import errno
import functools
import tempfile

from schemas.sandbox import SandboxUnavailable

DENIED = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsconfig",
    "fsmount",
    "fspick",
    "mount_setattr",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "open_by_handle_at",
    "name_to_handle_at",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "acct",
    "swapon",
    "swapoff",
    "reboot",
    "syslog",
    "quotactl",
    "lookup_dcookie",
    "iopl",
    "ioperm",
    "uselib",
    "vhangup",
)

# clone() with any of these makes a namespace; plain fork and threads pass.
CLONE_NEW_FLAGS = (
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
)


@functools.cache
def filter_bpf() -> bytes:
    """The compiled filter, as bubblewrap's `--seccomp FD` reads it."""
    try:
        import pyseccomp as sc
    except (ImportError, OSError, RuntimeError) as e:
        raise SandboxUnavailable(
            f"the seccomp filter needs libseccomp ({e}): apt-get install libseccomp2"
        ) from None
    deny = sc.ERRNO(errno.EPERM)
    flt = sc.SyscallFilter(sc.ALLOW)
    for name in DENIED:
        flt.add_rule(deny, name)
    for flag in CLONE_NEW_FLAGS:
        flt.add_rule(deny, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    # clone3 passes its flags in memory, out of a filter's reach: ENOSYS makes libc
    # fall back to clone(), which the rules above can see.
    flt.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    with tempfile.TemporaryFile() as out:
        flt.export_bpf(out)
        out.seek(0)
        return out.read()
