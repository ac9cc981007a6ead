"""A server on a NATS server of the test's own, which the test stops and starts again."""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from adapters.config.settings import Settings
from adapters.processes.embedded import EmbeddedNats
from tests.e2e.client import Server
from tests.e2e.conftest import UNLIMITED, script_path


@dataclass
class OwnNats:
    """The test's NATS server: `stop` it, then `restart` it on the same port and data."""

    root: Path
    server: EmbeddedNats

    def stop(self) -> None:
        self.server.stop()

    def freeze(self) -> None:
        """SIGSTOP: connections stay open and nothing moves (clients notice only by ping)."""
        self._signal(signal.SIGSTOP)

    def thaw(self) -> None:
        self._signal(signal.SIGCONT)

    def _signal(self, signum: signal.Signals) -> None:
        assert self.server.pid is not None, "not started"
        os.kill(self.server.pid, signum)

    def restart(self) -> None:
        self.server = EmbeddedNats(self.root, port=self.server.port)
        self.server.start()


@contextmanager
def server_on_own_nats(
    database_url: str, settings: Settings, data_root: Path, script: str
) -> Iterator[tuple[Server, OwnNats]]:
    """A started `serve` with the scripted model `script`, on its own NATS; both stopped."""
    root = data_root / f"own-nats-{uuid.uuid4().hex[:8]}"
    nats = OwnNats(root, EmbeddedNats(root))
    nats_url = nats.server.start()
    server = Server(
        database_url, nats_url, settings.nats_stream, data_root / f"e2e-{uuid.uuid4().hex[:6]}",
        script=script_path(script), extra_env=UNLIMITED,
    )  # fmt: skip
    try:
        yield server.start(), nats
    finally:
        server.stop()
        nats.stop()
