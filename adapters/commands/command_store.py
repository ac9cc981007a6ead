"""Where a command that reads the event store (`replay`, `usage`) reads it from, said
to the person who ran it: which data directory (or `TOKENDANCE_DATABASE_URL`), and
that it holds nothing, instead of quietly starting new empty servers somewhere."""

from __future__ import annotations

import sys
from urllib.parse import urlsplit

from adapters.config.settings import Settings
from adapters.system import System

WHERE_SERVE_KEEPS_IT = (
    "pass --data-dir (or set TOKENDANCE_DATA_DIR) to the directory `tokendance serve` "
    "uses, or TOKENDANCE_DATABASE_URL to its Postgres"
)


def store_place(settings: Settings) -> str:
    """The event store the settings name, for people."""
    if settings.database_url is None:
        return f"the data directory {settings.data_dir.absolute()}"
    url = urlsplit(settings.database_url)  # never its password
    return f"the Postgres of TOKENDANCE_DATABASE_URL ({url.hostname}:{url.port or 5432}{url.path})"


def require_recorded(settings: Settings, command: str) -> None:
    """Stop, saying so, when the embedded store the settings name was never made (no
    server is started and no directory created for a command that only reads)."""
    if settings.database_url is None and not (settings.data_dir / "postgres").exists():
        sys.exit(
            f"tokendance {command}: nothing recorded in {store_place(settings)} (it holds "
            f"no event store); {WHERE_SERVE_KEEPS_IT}"
        )


def empty_store_note(system: System, command: str) -> str | None:
    """What to tell the person when the store holds no session events at all."""
    if system.container.recorder.max_notification_id():
        return None
    return (
        f"tokendance {command}: {store_place(system.settings)} holds no session events; "
        f"{WHERE_SERVE_KEEPS_IT}"
    )
