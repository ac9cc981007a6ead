"""Tables every API replica shares in the event store's database (the rate-limit
counters, the failed logins): made on first use under an advisory lock, read and
written through the datastore's pool, a database error raised as `CountersUnavailable`
(the limits built on them fail open)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import ClassVar, Self

import psycopg
from eventsourcing.persistence import PersistenceError
from eventsourcing.postgres import PostgresDatastore, PostgresFactory
from psycopg.rows import DictRow

from adapters.container import Container
from adapters.http.middleware.limit_counters import CountersUnavailable


class SharedTables:
    """The base of a store of shared tables: `statements` make them, under the
    transaction-level advisory lock (`space`, 0) so replicas starting together agree."""

    statements: ClassVar[tuple[str, ...]]
    space: ClassVar[int]

    def __init__(self, datastore: PostgresDatastore) -> None:
        self.datastore = datastore
        self._ready = False
        self._lock = threading.Lock()
        self._next_sweep = 0.0

    @classmethod
    def of(cls, container: Container) -> Self:
        """The tables in the event store's database, through its connection pool."""
        factory = container.sessions.factory
        assert isinstance(factory, PostgresFactory)
        return cls(factory.datastore)

    def create_tables(self) -> None:
        with self._connection(ready=True) as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s, 0)", (self.space,))  # racing replicas
            for statement in self.statements:
                conn.execute(statement)
        self._ready = True

    @contextmanager
    def _connection(self, *, ready: bool = False) -> Iterator[psycopg.Connection[DictRow]]:
        """A pooled connection (autocommit), the tables made first unless `ready`; a
        database error comes out as `CountersUnavailable`."""
        if not (ready or self._ready):
            with self._lock:
                if not self._ready:
                    self.create_tables()
        try:
            with self.datastore.get_connection() as conn:
                yield conn
        except (psycopg.Error, PersistenceError) as e:
            raise CountersUnavailable(str(e)) from e
