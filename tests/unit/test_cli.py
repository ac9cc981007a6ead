"""The `tokendance` command understands its arguments without loading the system, and
every command it accepts has something to run."""

from __future__ import annotations

import subprocess
import sys

import pytest

from adapters.cli import _parser
from adapters.commands.cli_commands import COMMANDS

SESSION = "0b1f6a52-43a4-4c8e-9a33-6a1c4f4f5e01"
EVERY_COMMAND = [
    ["serve", "--port", "9"], ["api"], ["worker"], ["relay"], ["projections"],
    ["projections", "rebuild", "sessions"], ["demo", "--slides"], ["replay", SESSION],
    ["usage", "--group-by", "model,day"], ["memory", "reembed"], ["memory", "graphs"],
    ["teams", "list", "--user", "ada@example.com"], ["audit", "verify", SESSION],
    ["audit", "verify", "--all"], ["audit", "anchor", "--all"], ["audit", "backfill"],
    ["secrets", "reseal"], ["erase", "ada@example.com"],
]  # fmt: skip


@pytest.mark.parametrize("argv", EVERY_COMMAND, ids=" ".join)
def test_every_command_the_parser_accepts_has_a_body(argv: list[str]) -> None:
    assert _parser().parse_args(argv).command in COMMANDS


def test_all_the_commands_are_reached() -> None:
    reached = {_parser().parse_args(argv).command for argv in EVERY_COMMAND}
    assert reached == set(COMMANDS)


def loaded_of(modules: tuple[str, ...], after: str) -> list[str]:
    """Which of `modules` a fresh interpreter has loaded after running `after`."""
    probe = f"{after}\nimport sys\nprint(','.join(m for m in {modules!r} if m in sys.modules))"
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    return [m for m in out.stdout.strip().split(",") if m]


def test_help_and_a_bad_argument_answer_without_loading_the_servers_or_the_wiring() -> None:
    asked = (
        "import contextlib, io\n"
        "from adapters import cli\n"
        "for argv in (['--help'], ['replay', 'not-a-session']):\n"
        "    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()),"
        " contextlib.redirect_stderr(io.StringIO()):\n"
        "        cli.main(argv)"
    )
    heavy = ("adapters.bootstrap", "adapters.commands.cli_commands", "psycopg", "nats")
    assert loaded_of(heavy, asked) == []
