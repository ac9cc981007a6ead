"""What a sandboxed run is given and gives back (the `Sandbox` port's types, in
`application/ports.py`, and the runners' in `sandbox/`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal


@dataclass(frozen=True)
class SandboxLimits:
    """What one sandboxed run may use; reaching a limit ends the run and names it."""

    wall_seconds: float = 30.0  # the outer kill
    cpu_seconds: int = 30
    memory_bytes: int = 512 * 1024 * 1024  # the whole run; also each process's address space
    processes: int = 64
    file_bytes: int = 64 * 1024 * 1024  # largest file it may write
    open_files: int = 256
    output_bytes: int = 1024 * 1024  # stdout and stderr each; the rest is dropped
    tmp_bytes: int = 64 * 1024 * 1024  # its /tmp


SandboxLimit = Literal["wall_time", "cpu_time", "memory", "processes", "file_size", "output"]


@dataclass(frozen=True)
class SandboxRun:
    """A command to run in a fresh, empty work directory holding `files` (relative
    paths); the work directory is its current directory and its only writable place
    (with a size-capped /tmp). No network, unless `allow_domains` names some (reached
    through the host's filtering proxy)."""

    argv: tuple[str, ...]
    files: Mapping[str, bytes] = field(default_factory=dict)
    limits: SandboxLimits = SandboxLimits()
    allow_domains: tuple[str, ...] = ()
    stdin: bytes = b""


@dataclass(frozen=True)
class SandboxResult:
    """How a run ended. `files`: what it created or changed in its work directory."""

    exit_code: int  # negative: killed by that signal
    stdout: str
    stderr: str
    duration_ms: int
    files: Mapping[str, bytes]
    limit: SandboxLimit | None = None  # the limit that ended it, if one did
    stdout_truncated: bool = False
    stderr_truncated: bool = False


class SandboxUnavailable(Exception):
    """The sandbox cannot run here (say, bubblewrap is not installed); the message says
    what is missing and how to get it."""

    code = "SANDBOX_UNAVAILABLE"
