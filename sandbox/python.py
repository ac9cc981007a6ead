"""The Python that sandboxed code runs with, and the argv to run code or a script."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class PythonRuntime:
    """An interpreter and the host directories it needs, bound read-only into the
    sandbox at the same paths (a venv's `pyvenv.cfg` names its base by path)."""

    executable: str
    paths: tuple[str, ...]

    @classmethod
    def current(cls) -> PythonRuntime:
        """This process's interpreter: the project's venv, which has numpy, pandas and
        matplotlib, and the base installation the venv links to."""
        prefixes = {os.path.realpath(sys.prefix), os.path.realpath(sys.base_prefix)}
        # A venv's python may be a symlink into the base; both ends are bound.
        executable = os.path.join(sys.prefix, "bin", "python")
        if not os.path.exists(executable):
            executable = sys.executable
        return cls(executable=executable, paths=outermost(prefixes))


def outermost(paths: set[str]) -> tuple[str, ...]:
    """`paths` without those inside another of them, sorted."""
    kept = sorted(paths)
    return tuple(p for p in kept if not any(p.startswith(q + "/") for q in kept if q != p))


def python_argv(code: str, runtime: PythonRuntime | None = None) -> tuple[str, ...]:
    """Run `code` as `python -c`. Not `-I`: the work directory stays importable, so
    code can import the helper modules it wrote there (the environment is the
    sandbox's own, so ignoring it would gain nothing); no .pyc files are written."""
    python = (runtime or PythonRuntime.current()).executable
    return (python, "-B", "-s", "-c", code)


def script_argv(
    path: str, args: tuple[str, ...] = (), runtime: PythonRuntime | None = None
) -> tuple[str, ...]:
    """Run the script at `path` (inside the sandbox) with `args`."""
    python = (runtime or PythonRuntime.current()).executable
    return (python, "-B", "-s", path, *args)
