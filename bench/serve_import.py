"""What a `tokendance serve` process pays before it does anything: importing its code.

Every server a test starts, and every replica an operator starts, imports the serve
path (`adapters.http.server` and `adapters.bootstrap`) first. This measures the CPU
(user + system) of a fresh process that does only that, three ways, in alternating
rounds so the machine's load weighs on each alike:

- `this tree`: as `make test` runs it, the project's modules compiled (`make bytecode`);
- `this tree, no bytecode`: a copy without `__pycache__`, run with
  PYTHONDONTWRITEBYTECODE=1 (as CI's environment sets it): every module compiled again;
- `REV` (with `--against REV`): a checkout of another commit, compiled like this tree.

python -m bench.serve_import [--rounds 7] [--against REV]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
PACKAGES = ("adapters", "application", "domain", "projections", "schemas", "skills", "sandbox")
IMPORT = "import adapters.http.server, adapters.bootstrap"


def compiled(tree: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "-j", "0", *PACKAGES],
        cwd=tree, check=True, capture_output=True,
    )  # fmt: skip


def cpu_of_import(tree: Path) -> float:
    """Seconds of CPU a fresh interpreter spends importing the serve path from `tree`."""
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    child = subprocess.Popen([sys.executable, "-c", IMPORT], cwd=tree, env=env)
    _, status, usage = os.wait4(child.pid, 0)
    code = child.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    if code != 0:
        raise SystemExit(f"importing the serve path from {tree} failed ({code})")
    return usage.ru_utime + usage.ru_stime


def copy_without_bytecode(into: Path) -> Path:
    tree = into / "no-bytecode"
    for package in PACKAGES:
        skip = shutil.ignore_patterns("__pycache__")
        shutil.copytree(HERE / package, tree / package, ignore=skip)
    return tree


def checkout(rev: str, into: Path) -> Path:
    tree = into / "rev"
    subprocess.run(["git", "worktree", "add", "--detach", str(tree), rev], cwd=HERE, check=True,
                   capture_output=True)  # fmt: skip
    compiled(tree)
    return tree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--against", help="a commit to compare with (a git worktree)")
    options = parser.parse_args()
    compiled(HERE)
    with tempfile.TemporaryDirectory(prefix="serve-import-") as tmp:
        trees = {"this tree": HERE, "this tree, no bytecode": copy_without_bytecode(Path(tmp))}
        if options.against:
            trees[options.against] = checkout(options.against, Path(tmp))
        try:
            times: dict[str, list[float]] = {name: [] for name in trees}
            names = list(trees)
            for round_ in range(options.rounds):
                order = names if round_ % 2 == 0 else names[::-1]
                for name in order:
                    times[name].append(cpu_of_import(trees[name]))
        finally:
            if options.against:
                remove = ["git", "worktree", "remove", "--force", str(trees[options.against])]
                subprocess.run(remove, cwd=HERE, capture_output=True)
    print(f"CPU to import the serve path, median of {options.rounds} fresh processes "
          f"({os.cpu_count()} cores):")  # fmt: skip
    base = statistics.median(times["this tree"])
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:28} {median * 1000:7.0f} ms  ({median / base:.2f}x this tree; "
              f"min {min(values) * 1000:.0f}, max {max(values) * 1000:.0f})")  # fmt: skip


if __name__ == "__main__":
    main()
