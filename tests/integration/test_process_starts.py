"""Checks that start a whole Python process loading the application (seconds each), out
of the unit tier, which stays under a minute; they need no server.

From tests/unit/test_cli.py: the wiring leaves the heavy libraries to their first use.
From tests/unit/test_trusted_proxies.py: a bad `TOKENDANCE_TRUSTED_PROXIES` stops `serve`
before it starts anything.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.test_cli import loaded_of
from tests.unit.test_trusted_proxies import PROXIES

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parents[2]


def test_the_wiring_leaves_the_heavy_renderers_and_clients_to_their_first_use() -> None:
    """python-pptx, ReportLab, trafilatura and minio load when a deck, a PDF, a page or
    an S3 store is first wanted: a process that never needs one starts without them."""
    wired = (
        "import tempfile\n"
        "from pathlib import Path\n"
        "import adapters.commands.cli_commands\n"
        "from adapters.bootstrap.parts import build_blobs, build_tools\n"
        "from adapters.config.settings import Settings\n"
        "settings = Settings(data_dir=Path(tempfile.mkdtemp()))\n"
        "tools, blobs = build_tools(settings), build_blobs(settings)"
    )
    assert loaded_of(("pptx", "reportlab", "trafilatura", "minio"), wired) == []


def test_the_command_says_so_before_it_starts_anything() -> None:
    started = subprocess.run(
        [sys.executable, "-m", "adapters.cli", "serve"],
        env={PROXIES: "loadbalancer", "PATH": ""},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert started.returncode == 1
    assert f"{PROXIES}: 'loadbalancer' is not an IP address" in started.stderr
    assert "Traceback" not in started.stderr
