"""Each resource limit holds, ends the run, and is named as the one that did."""

from __future__ import annotations

from pathlib import Path

from sandbox.bubblewrap import BubblewrapSandbox
from tests.sandbox.conftest import LIMITS, WORK_BYTES, needs_bwrap, run_python

pytestmark = needs_bwrap


async def test_memory_bomb_ends_with_the_memory_limit(sandbox: BubblewrapSandbox) -> None:
    code = "hog = []\nwhile True:\n    hog.append(bytearray(16 * 1024 * 1024))\n"
    result = await run_python(sandbox, code)
    assert result.exit_code != 0
    assert "MemoryError" in result.stderr
    assert result.limit == "memory"


async def test_filling_the_work_directory_ends_with_the_file_size_limit(
    sandbox: BubblewrapSandbox, sandbox_root: Path
) -> None:
    code = """
block = b"x" * (1024 * 1024)
for i in range(10_000):
    with open(f"fill-{i}", "wb") as f:
        f.write(block)
print("wrote everything")
"""
    result = await run_python(sandbox, code, wall_seconds=30)
    assert "wrote everything" not in result.stdout
    assert result.limit == "file_size"
    assert sum(len(b) for b in result.files.values()) <= WORK_BYTES
    assert list(sandbox_root.iterdir()) == []  # the work directory is gone


async def test_filling_tmp_stops_at_its_size(sandbox: BubblewrapSandbox) -> None:
    code = """
written = 0
try:
    for i in range(1000):  # files under the file size limit, more than /tmp holds
        with open(f"/tmp/fill-{i}", "wb") as f:
            for _ in range(16):
                f.write(b"x" * 65536)
                f.flush()
                written += 65536
finally:
    print("written", written)
"""
    result = await run_python(sandbox, code)
    assert "No space left on device" in result.stderr
    assert result.limit == "file_size"
    written = int(result.stdout.split()[-1])
    assert written <= LIMITS.tmp_bytes


async def test_dev_shm_is_capped_too(sandbox: BubblewrapSandbox) -> None:
    code = """
for i in range(1000):
    with open(f"/dev/shm/fill-{i}", "wb") as f:
        f.write(b"x" * 1024 * 1024)
"""
    result = await run_python(sandbox, code)
    assert "No space left on device" in result.stderr
    assert result.limit == "file_size"


async def test_a_file_past_the_file_size_limit_fails(sandbox: BubblewrapSandbox) -> None:
    code = f"""
with open("big", "wb") as f:
    for _ in range({LIMITS.file_bytes // 65536 + 1}):
        f.write(b"x" * 65536)
        f.flush()
"""
    result = await run_python(sandbox, code)
    assert "File too large" in result.stderr
    assert result.limit == "file_size"
    assert len(result.files.get("big", b"")) <= LIMITS.file_bytes


async def test_open_files_are_limited(sandbox: BubblewrapSandbox) -> None:
    code = """
import os
opened = []
try:
    while True:
        opened.append(os.open("/dev/null", os.O_RDONLY))
finally:
    print("opened", len(opened))
"""
    result = await run_python(sandbox, code)
    assert "Too many open files" in result.stderr
    assert int(result.stdout.split()[-1]) < LIMITS.open_files


async def test_cpu_spin_ends_with_the_cpu_limit(sandbox: BubblewrapSandbox) -> None:
    result = await run_python(sandbox, "while True:\n    pass\n", cpu_seconds=1, wall_seconds=60)
    assert result.limit == "cpu_time"
    assert result.exit_code < 0  # killed by SIGXCPU (or SIGKILL at the hard limit)


async def test_sleeping_past_the_wall_clock_is_killed(sandbox: BubblewrapSandbox) -> None:
    result = await run_python(sandbox, "import time\ntime.sleep(600)\n", wall_seconds=1)
    assert result.limit == "wall_time"
    assert result.exit_code < 0


async def test_a_flood_on_stdout_is_capped_and_ended(sandbox: BubblewrapSandbox) -> None:
    code = """
import sys
chunk = b"x" * (1024 * 1024)
for _ in range(100):  # 100 MB
    sys.stdout.buffer.write(chunk)
print("all written", file=sys.stderr)
"""
    result = await run_python(sandbox, code, wall_seconds=30)
    assert result.limit == "output"
    assert result.stdout_truncated
    assert len(result.stdout) == LIMITS.output_bytes
    assert "all written" not in result.stderr


async def test_output_past_the_cap_is_truncated_without_ending_the_run(
    sandbox: BubblewrapSandbox,
) -> None:
    code = f"import sys\nsys.stderr.write('e' * {LIMITS.output_bytes * 2})\nprint('done')\n"
    result = await run_python(sandbox, code)
    assert result.exit_code == 0
    assert result.limit is None
    assert result.stderr_truncated and not result.stdout_truncated
    assert len(result.stderr) == LIMITS.output_bytes
    assert result.stdout == "done\n"
