"""`tokendance projections rebuild` against the servers named by the environment."""

from __future__ import annotations

import os
import subprocess
import sys
from uuid import uuid4

import pytest

from adapters.container import Container

pytestmark = pytest.mark.integration


def test_rebuild_command_reports_events_and_rate(
    container: Container, database_url: str, nats_url: str, data_root
) -> None:  # type: ignore[no-untyped-def]
    sid = container.sessions.start_session(
        workspace_id=uuid4(), owner_id=uuid4(), title="cli"
    ).session_id
    for i in range(20):
        container.sessions.append_user_message(sid, f"m{i}")
    env = {
        **os.environ,
        "TOKENDANCE_DATABASE_URL": database_url,
        "TOKENDANCE_NATS_URL": nats_url,
        "TOKENDANCE_DATA_DIR": str(data_root / "cli"),
        "TOKENDANCE_MASTER_KEY_FILE": str(container.settings.data_dir / "master-key"),
    }
    done = subprocess.run(
        [sys.executable, "-m", "adapters.cli", "projections", "rebuild", "sessions"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "rebuilt sessions: 21 events up to notification id 21" in done.stdout
    assert "events/s" in done.stdout
    assert "rebuilding sessions" in done.stderr  # the progress bar
    row = container.views["sessions"].get(sid)
    assert row is not None and row.message_count == 20

    unknown = subprocess.run(
        [sys.executable, "-m", "adapters.cli", "projections", "rebuild", "nope"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert unknown.returncode != 0 and "unknown read model 'nope'" in unknown.stderr
