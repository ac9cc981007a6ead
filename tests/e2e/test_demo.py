"""`tokendance demo` and `tokendance replay` as a newcomer runs them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def tokendance(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOKENDANCE_", "ANTHROPIC_"))}
    return subprocess.run(
        [sys.executable, "-m", "adapters.cli", "--data-dir", str(data_dir), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_the_demo_runs_a_session_shows_it_and_its_replay_matches(data_root: Path) -> None:
    data_dir = data_root / "demo"
    question = "Are heat pumps any good up north?"
    demo = tokendance(data_dir, "demo", "--question", question)
    assert demo.returncode == 0, demo.stderr
    out = demo.stdout
    assert f"user: {question}" in out
    assert re.search(rf"UserMessageAppended +{re.escape(repr(question))}", out)
    assert "run ended: completed" in out
    answer = out.split("== answer ==\n", 1)[1]
    assert answer.startswith("  Yes: modern cold-climate heat pumps work well")
    for section in ("== event stream ==", "== task_plan.md ==", "== findings.md ==",
                    "== progress.md ==", "== token usage ==", "== replay =="):  # fmt: skip
        assert section in out
    assert "FindingRecorded" in out and "- [x] Find how heat pump efficiency" in out
    assert re.search(r"\d+ events reproduced identically", out)

    session_id = re.search(r"^session ([0-9a-f-]{36})$", out, re.MULTILINE)
    assert session_id is not None
    again = tokendance(data_dir, "replay", session_id.group(1))
    assert again.returncode == 0, again.stderr
    assert "reproduced identically" in again.stdout

    bad = tokendance(data_dir, "replay", "not-a-uuid")
    assert bad.returncode == 2 and "not a session id" in bad.stderr
