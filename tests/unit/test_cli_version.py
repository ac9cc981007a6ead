"""`tokendance --version` names the installed package's version, without loading the system."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata

import pytest

from adapters.cli import main


def test_version_is_the_installed_packages(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as ended:
        main(["--version"])
    assert ended.value.code == 0
    assert capsys.readouterr().out == f"tokendance {metadata.version('tokendance')}\n"


def test_version_from_the_command_line_needs_no_command() -> None:
    done = subprocess.run(
        [sys.executable, "-c", "from adapters.cli import main; main()", "--version"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["tokendance", metadata.version("tokendance")]
