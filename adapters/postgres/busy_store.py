"""A request that finds every connection of a pool busy answers at once.

The library's recorders retry an `OperationalError` ten times, and a pool that has no
free connection within its timeout (`POSTGRES_CONNECT_TIMEOUT`, 3 s) is one: a burst
that exhausts the store's pool kept each waiting request for about half a minute before
it answered 503. Within a request (`fail_fast`, set by the HTTP app for each one) that
timeout is `StoreBusy` instead, which no recorder retries, and the request answers 503
`UNAVAILABLE` with `Retry-After` after one wait. The background roles (relay, projections,
workers) still wait and retry, as they should.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

import psycopg_pool
from eventsourcing.persistence import OperationalError
from eventsourcing.postgres import PostgresDatastore, PostgresFactory
from eventsourcing.utils import Environment, EnvType
from psycopg import Connection
from psycopg.rows import DictRow

from application.loop_writes import StoreBusy

_FAIL_FAST: ContextVar[bool] = ContextVar("tokendance_store_fails_fast", default=False)


def fail_fast() -> None:
    """A pool with no free connection is `StoreBusy` for the rest of this context."""
    _FAIL_FAST.set(True)


class BusyAwareDatastore(PostgresDatastore):
    """The library's datastore, whose busy pool is `StoreBusy` within a request."""

    @contextmanager
    def get_connection(self) -> Iterator[Connection[DictRow]]:
        try:
            with super().get_connection() as conn:
                yield conn
        except OperationalError as e:
            if _FAIL_FAST.get() and isinstance(e.__cause__, psycopg_pool.PoolTimeout):
                raise StoreBusy(f"every database connection is in use ({e})") from e
            raise


class BusyAwareFactory(PostgresFactory):
    """The library's Postgres factory, on a `BusyAwareDatastore` (`PERSISTENCE_MODULE`)."""

    def __init__(self, env: Environment | EnvType | None) -> None:
        super().__init__(env)
        # The datastore is built inside the library's constructor from the environment:
        # made ours after, as it is (the subclass adds a method and no state).
        self.datastore.__class__ = BusyAwareDatastore
