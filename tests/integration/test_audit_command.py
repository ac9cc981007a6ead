"""`tokendance audit verify | anchor | backfill` against the servers named by the
environment: exit 0 on a clean chain, 1 naming the first bad version and its session,
2 for a session that does not exist."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from uuid import UUID, uuid4

import pytest

from adapters.cli import _parser
from adapters.commands.audit_commands import run_audit
from adapters.container import Container
from tests.integration.test_hash_chain import rows, session_with, sql

pytestmark = pytest.mark.integration


def tokendance(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`tokendance audit ARGS` as a process of its own, on the servers `env` names."""
    return subprocess.run(
        [sys.executable, "-m", "adapters.cli", "audit", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def audit(container: Container, *args: str) -> subprocess.CompletedProcess[str]:
    """The same command's work on the test's own system, in this process (each process
    of its own costs seconds of imports; two of them above check the command's wiring)."""
    parsed = _parser().parse_args(["audit", *args])
    out, err = io.StringIO(), io.StringIO()
    status = run_audit(container, parsed, out, err)
    return subprocess.CompletedProcess(args, status, out.getvalue(), err.getvalue())


@pytest.fixture
def env(container: Container, database_url: str, nats_url: str, data_root: Path) -> dict[str, str]:
    return {
        **os.environ,
        "TOKENDANCE_DATABASE_URL": database_url,
        "TOKENDANCE_NATS_URL": nats_url,
        "TOKENDANCE_DATA_DIR": str(data_root / f"cli-{uuid4().hex[:6]}"),
        "TOKENDANCE_MASTER_KEY_FILE": str(container.settings.data_dir / "master-key"),
    }


def test_verify_names_the_first_bad_version_and_anchor_prints_the_heads(
    container: Container, database_url: str, env: dict[str, str]
) -> None:
    clean, tampered = session_with(container, 3), session_with(container, 5)
    ok = tokendance(env, "verify", str(clean))
    assert ok.returncode == 0, ok.stderr
    assert f"session {clean}: verified, 4 events" in ok.stdout

    sql(
        database_url,
        "UPDATE tokendance_events SET state = overlay(state placing 'Z'::bytea from 4 for 1) "
        "WHERE originator_id = %s AND originator_version = 3",
        tampered,
    )
    bad = audit(container, "verify", str(tampered))
    assert bad.returncode == 1
    assert f"session {tampered}: first bad version 3" in bad.stderr

    every = audit(container, "verify", "--all")
    assert every.returncode == 1
    assert f"session {tampered}: first bad version 3" in every.stderr
    assert str(clean) not in every.stderr and "1 bad" in every.stderr

    sql(
        database_url,
        "DELETE FROM tokendance_events WHERE originator_id = %s AND originator_version = 2",
        tampered,
    )
    gap = audit(container, "verify", str(tampered))
    assert gap.returncode == 1 and "first bad version 2" in gap.stderr and "missing" in gap.stderr

    nobody = uuid4()
    missing = audit(container, "verify", str(nobody))
    assert missing.returncode == 2 and f"no session {nobody}" in missing.stderr

    anchored = audit(container, "anchor", "--all")
    assert anchored.returncode == 0, anchored.stderr
    heads = {UUID(h["session_id"]): h for h in map(json.loads, anchored.stdout.splitlines())}
    last = rows(database_url, "tokendance_events", clean)[-1]
    assert heads[clean] == {"session_id": str(clean), "version": 4, "head_hash": last[4].hex()}  # type: ignore[union-attr]
    one = audit(container, "anchor", str(clean))
    assert json.loads(one.stdout) == heads[clean]
    assert audit(container, "anchor", str(nobody)).returncode == 2


def test_backfill_chains_old_events_then_they_verify(
    container: Container, database_url: str, env: dict[str, str]
) -> None:
    sid = session_with(container, 3)
    sql(database_url, "UPDATE tokendance_events SET prev_hash = NULL, hash = NULL")
    sql(database_url, "UPDATE accounts_events SET prev_hash = NULL, hash = NULL")
    unhashed = tokendance(env, "verify", str(sid))
    assert unhashed.returncode == 1 and "backfill" in unhashed.stderr
    done = audit(container, "backfill")
    assert done.returncode == 0, done.stderr
    assert "sessions log: chained 4 events" in done.stdout
    assert audit(container, "verify", "--all").returncode == 0
    again = audit(container, "backfill")
    assert "sessions log: chained 0 events" in again.stdout
