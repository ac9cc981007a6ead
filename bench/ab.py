"""A benchmark's figure for this working tree against another commit, in alternating pairs.

On a shared machine a figure moves by more than most changes (chat_accept's CPU per
message by 2-3 ms from one run to the next), so one run of each says little. This runs
the benchmark in a checkout of `REV` (a git worktree, removed at the end) and in this
tree by turns, the order swapped from pair to pair so a drift of the machine's load
weighs on both sides alike, and reports each pair's difference with their mean and
median.

python -m bench.ab REV [--pairs 4] [--figure REGEX] -- MODULE [ARGS...]
e.g. python -m bench.ab a280023 -- bench.chat_accept --sessions 50
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
FIGURES = {  # the figure each benchmark is compared on, unless --figure says otherwise
    "bench.chat_accept": r"CPU per message and its run: ([0-9.]+) ms",
    "bench.engine_overhead": r"overhead per step median:\s+([0-9.]+) ms",
    "bench.profile_serve": r"([0-9]+) samples at",
}


def run(tree: Path, module: str, args: list[str], figure: re.Pattern[str]) -> float:
    """The figure one run of `module` in `tree` prints (its first match)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run(
        [sys.executable, "-m", module, *args], cwd=tree, env=env, capture_output=True, text=True
    )
    found = figure.search(done.stdout + done.stderr)
    if found is None:
        tail = (done.stdout + done.stderr)[-2000:]
        raise SystemExit(f"{module} in {tree} printed no match for {figure.pattern!r}:\n{tail}")
    return float(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", help="the commit to compare this working tree with")
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--figure", help="a regex whose first group is the figure")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    options, command = parser.parse_args(argv[:split]), argv[split + 1 :]
    if not command:
        parser.error("name the benchmark after --, e.g. -- bench.chat_accept")
    module, args = command[0], command[1:]
    pattern = options.figure or FIGURES.get(module)
    if pattern is None:
        parser.error(f"say which figure of {module} to compare (--figure REGEX)")
    figure = re.compile(pattern)
    with tempfile.TemporaryDirectory(prefix="tokendance-ab-") as scratch:
        other = Path(scratch) / "tree"
        subprocess.run(
            ["git", "worktree", "add", "--detach", "-q", str(other), options.rev],
            cwd=HERE, check=True,
        )  # fmt: skip
        try:
            compare(other, options.rev, module, args, figure, options.pairs)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(other)], cwd=HERE)


def compare(
    other: Path, rev: str, module: str, args: list[str], figure: re.Pattern[str], pairs: int
) -> None:
    print(
        f"{module} {' '.join(args)}: this tree against {rev}, {pairs} pairs, {os.cpu_count()} cores"
    )
    differences = []
    for n in range(pairs):
        if n % 2:  # every other pair starts with the other side
            that, this = run(other, module, args, figure), run(HERE, module, args, figure)
        else:
            this, that = run(HERE, module, args, figure), run(other, module, args, figure)
        differences.append(this - that)
        print(f"pair {n + 1}: this {this:g}, {rev} {that:g}, difference {this - that:+.2f}")
    print(
        f"difference, this tree minus {rev}: mean {statistics.mean(differences):+.2f}, "
        f"median {statistics.median(differences):+.2f} (from {min(differences):+.2f} "
        f"to {max(differences):+.2f})"
    )


if __name__ == "__main__":
    main()
