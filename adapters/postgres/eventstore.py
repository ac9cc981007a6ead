"""Configuration of eventsourcing's Postgres persistence from a database URL."""

from __future__ import annotations

from psycopg.conninfo import conninfo_to_dict

from adapters.postgres.busy_store import BusyAwareDatastore


def eventstore_env(database_url: str, *, pool_size: int, max_overflow: int) -> dict[str, str]:
    """The library's settings for our event store.

    `POSTGRES_ENABLE_DB_FUNCTIONS` stays off: with it on, inserts skip the table lock
    that makes commit order equal notification order, and a tailing reader can then
    pass over an event that commits late. Our recorder (`LockedInsertRecorder`) has a
    function of its own that takes the lock.
    """
    params = conninfo_to_dict(database_url)
    return {
        # The library's Postgres factory, whose busy pool fails fast within a request.
        "PERSISTENCE_MODULE": "adapters.postgres.busy_store:BusyAwareFactory",
        "POSTGRES_DBNAME": str(params.get("dbname") or "postgres"),
        "POSTGRES_HOST": str(params.get("host") or "localhost"),
        "POSTGRES_PORT": str(params.get("port") or "5432"),
        "POSTGRES_USER": str(params.get("user") or "postgres"),
        "POSTGRES_PASSWORD": str(params.get("password") or ""),
        "POSTGRES_POOL_SIZE": str(pool_size),
        "POSTGRES_MAX_OVERFLOW": str(max_overflow),
        "POSTGRES_ENABLE_DB_FUNCTIONS": "no",
        "APPLICATION_RECORDER_TOPIC": "adapters.postgres.recorder:LockedInsertRecorder",
        # Seconds a writer waits for the table lock before the library retries.
        "POSTGRES_LOCK_TIMEOUT": "10",
        # A rebuild holds one transaction open while it reads the log in pages.
        "POSTGRES_IDLE_IN_TRANSACTION_SESSION_TIMEOUT": "60",
        # No ping on every checkout (a round trip per command): the library retries
        # an operation whose connection turned out to be dead, and so do our runners.
        "POSTGRES_PRE_PING": "n",
        # Seconds to wait for a pooled connection (the library's default is 30, and it
        # retries an operation ten times): while Postgres is down a command fails (503)
        # within about half a minute instead of hanging for five.
        "POSTGRES_CONNECT_TIMEOUT": "3",
    }


def datastore_of(
    database_url: str, *, pool_size: int = 2, max_overflow: int = 10
) -> BusyAwareDatastore:
    """A pooled datastore on `database_url`, for a tool's own tables (no event store)."""
    params = conninfo_to_dict(database_url)
    return BusyAwareDatastore(
        str(params.get("dbname") or "postgres"),
        str(params.get("host") or "localhost"),
        str(params.get("port") or "5432"),
        str(params.get("user") or "postgres"),
        str(params.get("password") or ""),
        pool_size=pool_size,
        max_overflow=max_overflow,
    )
