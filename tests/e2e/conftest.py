"""Fixtures of the end-to-end suites: real `tokendance serve` processes, always stopped."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from adapters.config.settings import Settings
from tests.databases import own_database
from tests.e2e.client import Server

SCRIPTS = Path(__file__).parent / "scripts"

StartServer = Callable[..., Server]

# These suites are not about rate limits (tests/e2e/test_limits_and_idempotency.py is):
# limits high enough that polling and fuzzing never meet them. `extra_env` overrides.
UNLIMITED = {
    "TOKENDANCE_RATE_LIMIT_PER_MINUTE": "100000",
    "TOKENDANCE_MAX_STREAMS_PER_USER": "100",
    "TOKENDANCE_UPLOADS_PER_MINUTE": "1000",
    "TOKENDANCE_LOGIN_ATTEMPTS": "100000",  # wrong passwords on purpose (tokens, fuzzing)
}


def script_path(name: str | Path | None) -> Path | None:
    """A script of `tests/e2e/scripts` by name (`"chat"` -> `scripts/chat.yaml`), or a path."""
    if name is None or isinstance(name, Path):
        return name
    path = SCRIPTS / f"{name}.yaml"
    assert path.exists(), f"no scripted-model script {path}"
    return path


@pytest.fixture
def start_server(
    database_url: str, nats_url: str, settings: Settings, data_root: Path
) -> Iterator[StartServer]:
    """Starts servers on the test's own database and stream; each is stopped at the end.

    `start_server("chat")` runs the scripted model of `scripts/chat.yaml`;
    `start_server(None)` runs with no model configured. Servers started again by the same
    test share the database, the stream and the data directory (a restart).
    """
    started: list[Server] = []
    data_dir = data_root / f"e2e-{settings.nats_stream.lower()}-{uuid.uuid4().hex[:6]}"

    def start(
        script: str | Path | None = None,
        *,
        extra_env: dict[str, str] | None = None,
        role: str = "serve",
        stderr: Path | None = None,
    ) -> Server:
        server = Server(
            database_url,
            nats_url,
            settings.nats_stream,
            data_dir,
            script=script_path(script),
            extra_env={**UNLIMITED, **(extra_env or {})},
            stderr=stderr,
            role=role,
        )
        started.append(server)
        return server.start()

    yield start
    for server in reversed(started):
        server.stop()


@contextlib.contextmanager
def module_server(
    servers: tuple[str, str],
    data_root: Path,
    template: str,
    script: str | Path | None = None,
    *,
    extra_env: dict[str, str] | None = None,
) -> Iterator[Server]:
    """One server for a module's tests, on a database (a copy of the template) and a
    stream of its own: for a module whose tests each act as a user of their own, so
    that none sees what another wrote. Each start of a server costs seconds."""
    admin_url, nats_url = servers
    stream = f"T{uuid.uuid4().hex[:12].upper()}"
    with own_database(admin_url, template) as url:
        server = Server(
            url, nats_url, stream, data_root / f"e2e-{stream.lower()}",
            script=script_path(script), extra_env={**UNLIMITED, **(extra_env or {})},
        )  # fmt: skip
        try:
            yield server.start()
        finally:
            server.stop()
