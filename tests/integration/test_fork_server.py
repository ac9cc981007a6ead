"""The fork server that starts the e2e suites' `tokendance` processes (tests/fork_server.py)
answers as `subprocess.Popen` would: the request's environment, working directory and
streams, the command's exit code, a signal's negative code, a wait that times out. And
the command's own answers to a server that is not there."""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import httpx
import pytest

from tests.e2e.client import free_port
from tests.fork_server import Forked, spawn
from tests.waiting import eventually

pytestmark = pytest.mark.integration


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TOKENDANCE_")}
    return {**env, **extra}


def test_the_command_reads_the_requested_environment_and_writes_to_the_given_streams(
    tmp_path: Path,
) -> None:
    out, err = tmp_path / "out", tmp_path / "err"
    with out.open("wb") as stdout:
        version = spawn(["--version"], clean_env(), stdout=stdout)
        forking = os.environ.get("TOKENDANCE_TEST_NO_FORK") != "1"
        assert isinstance(version, Forked) == forking
        assert version.wait(60) == 0
    assert out.read_text().startswith("tokendance ")

    with err.open("wb") as stderr:
        bad = spawn(["serve"], clean_env(TOKENDANCE_PORT="eighty"), stderr=stderr)
        assert bad.wait(60) == 1
    assert "TOKENDANCE_PORT must be an integer, not 'eighty'" in err.read_text()


def test_an_unreachable_postgres_is_named_with_what_to_check_and_no_password(
    tmp_path: Path,
) -> None:
    err = tmp_path / "err"
    url = "postgresql://someone:hunter2-secret@127.0.0.1:1/nowhere"
    with err.open("wb") as stderr:
        relay = spawn(["relay"], clean_env(TOKENDANCE_DATABASE_URL=url), stderr=stderr)
        assert relay.wait(60) == 1
    said = err.read_text()
    assert "tokendance: Postgres did not answer" in said, said
    assert "Check TOKENDANCE_DATABASE_URL" in said and "Traceback" not in said, said
    assert "hunter2" not in said


def test_a_running_server_is_waited_for_signalled_and_its_signal_reported(
    database_url: str, nats_url: str, tmp_path: Path
) -> None:
    env = clean_env(
        TOKENDANCE_DATABASE_URL=database_url,
        TOKENDANCE_NATS_URL=nats_url,
        TOKENDANCE_NATS_STREAM="FORKS",
        TOKENDANCE_DATA_DIR=str(tmp_path / "data"),
    )
    port = free_port()
    with (tmp_path / "err").open("wb") as stderr:
        server = spawn(["api", "--port", str(port)], env, stderr=stderr, cwd=tmp_path)

    def answering() -> bool:
        assert server.poll() is None, (tmp_path / "err").read_text()
        try:
            return httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200
        except httpx.HTTPError:
            return False

    eventually(answering, timeout=60, what="the forked API to answer", interval=0.1)
    with pytest.raises(subprocess.TimeoutExpired):
        server.wait(0.5)
    assert server.poll() is None
    os.kill(server.pid, 0)  # a process of its own, signalled by pid
    server.send_signal(signal.SIGKILL)
    assert server.wait(30) == -signal.SIGKILL
    server.kill()  # a process that has exited is not signalled again
