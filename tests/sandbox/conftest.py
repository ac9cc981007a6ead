"""A real bubblewrap sandbox for these tests, with short limits to keep them fast."""

from __future__ import annotations

import secrets
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from sandbox.bubblewrap import BubblewrapSandbox
from sandbox.python import python_argv
from sandbox.uids import HostUids
from schemas.sandbox import SandboxLimits, SandboxResult, SandboxRun

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None,
    reason="bubblewrap is not installed (apt-get install bubblewrap)",
)

LIMITS = SandboxLimits(
    wall_seconds=5,
    cpu_seconds=2,
    memory_bytes=512 * 1024 * 1024,
    processes=32,
    file_bytes=8 * 1024 * 1024,
    open_files=64,
    output_bytes=64 * 1024,
    tmp_bytes=8 * 1024 * 1024,
)
WORK_BYTES = 32 * 1024 * 1024


@pytest.fixture
def sandbox_root() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="tokendance-sandbox-test-"))
    yield root
    shutil.rmtree(root, ignore_errors=True)


def private_uids() -> HostUids:
    """Host uids no other sandbox on this machine uses (others run theirs meanwhile),
    so a test can tell its own runs' processes."""
    return HostUids(base=1_950_000_000 + secrets.randbelow(100_000) * 64, count=64)


@pytest.fixture
def sandbox(sandbox_root: Path) -> BubblewrapSandbox:
    return BubblewrapSandbox(sandbox_root, work_bytes=WORK_BYTES, uids=private_uids())


async def run_python(
    sandbox: BubblewrapSandbox,
    code: str,
    files: dict[str, bytes] | None = None,
    **limits: int,
) -> SandboxResult:
    """`code` run by the sandbox's Python with the test limits (some overridden)."""
    run = SandboxRun(
        argv=python_argv(code, sandbox.python),
        files=files or {},
        limits=replace(LIMITS, **limits),
    )
    return await sandbox.run(run)
