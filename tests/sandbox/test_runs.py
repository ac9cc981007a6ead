"""What an ordinary run gets: its files in, the files it writes out, its output, the
scientific Python stack; and what a machine without the sandbox says."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from sandbox.bubblewrap import BubblewrapSandbox
from sandbox.python import python_argv
from sandbox.workdir import BadFileName
from schemas.sandbox import SandboxRun, SandboxUnavailable
from tests.sandbox.conftest import needs_bwrap, run_python

pytestmark = needs_bwrap


async def test_files_go_in_and_what_changed_comes_back(
    sandbox: BubblewrapSandbox, sandbox_root: Path
) -> None:
    files = {"data/in.csv": b"a,b\n1,2\n", "keep.txt": b"same", "edit.txt": b"old"}
    code = """
import os
print(open("data/in.csv").read(), os.getcwd(), os.environ["HOME"])
open("edit.txt", "w").write("new")
os.makedirs("out", exist_ok=True)
open("out/result.txt", "w").write("made here")
os.mkfifo("pipe")
"""
    result = await run_python(sandbox, code, files=files)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == "a,b\n1,2\n /workspace /workspace\n"
    assert result.files == {"edit.txt": b"new", "out/result.txt": b"made here"}
    assert result.limit is None
    assert list(sandbox_root.iterdir()) == []


async def test_stdin_and_exit_code(sandbox: BubblewrapSandbox) -> None:
    run = SandboxRun(
        argv=python_argv("import sys\nprint(sys.stdin.read().upper())\nsys.exit(3)"),
        stdin=b"hello",
    )
    result = await sandbox.run(run)
    assert (result.exit_code, result.stdout, result.limit) == (3, "HELLO\n", None)


async def test_numpy_pandas_and_a_matplotlib_png(sandbox: BubblewrapSandbox) -> None:
    code = """
import numpy as np, pandas as pd
import matplotlib.pyplot as plt
frame = pd.DataFrame({"x": np.arange(5), "y": np.arange(5) ** 2})
print(frame["y"].sum())
frame.plot(x="x", y="y")
plt.savefig("chart.png")
"""
    result = await run_python(sandbox, code, wall_seconds=60, cpu_seconds=30)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == "30"
    assert result.files["chart.png"].startswith(b"\x89PNG\r\n\x1a\n")


async def test_concurrent_runs_see_only_their_own_files(sandbox: BubblewrapSandbox) -> None:
    code = (
        "import os\nprint(sorted(os.listdir('.')))\nopen('out.txt', 'w').write(open('me').read())"
    )
    runs = [
        run_python(sandbox, code, files={"me": str(i).encode(), f"only-{i}": b""}) for i in range(4)
    ]
    for i, result in enumerate(await asyncio.gather(*runs)):
        assert result.stdout.strip() == str(sorted(["me", f"only-{i}"]))
        assert result.files == {"out.txt": str(i).encode()}


@pytest.mark.parametrize("name", ["../escape", "/etc/passwd", "a/../../b", "nul\0", ""])
async def test_file_names_that_leave_the_work_directory_are_refused(
    sandbox: BubblewrapSandbox, sandbox_root: Path, name: str
) -> None:
    with pytest.raises(BadFileName):
        await run_python(sandbox, "print(1)", files={name: b"x"})
    assert list(sandbox_root.iterdir()) == []


async def test_without_bubblewrap_the_sandbox_says_how_to_get_it(sandbox_root: Path) -> None:
    missing = BubblewrapSandbox(sandbox_root, bwrap="/nonexistent/bwrap")
    assert not missing.available()
    assert BubblewrapSandbox(sandbox_root).available()
    with pytest.raises(SandboxUnavailable, match="apt-get install bubblewrap"):
        await missing.run(SandboxRun(argv=("true",)))
    assert SandboxUnavailable.code == "SANDBOX_UNAVAILABLE"
