"""The library's Postgres recorder, inserting without psycopg's pipeline mode.

eventsourcing inserts events in pipeline mode while holding the table lock that
orders commits. With an event of a few hundred kilobytes (a long user message) the
pipeline deadlocks: the client waits for a sync while the server waits for the rest
of the data (psycopg issue #685), and every writer then queues behind the lock. A
plain transaction does the same statements in the same order, one round trip more.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eventsourcing.persistence import InterfaceError, OperationalError, StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder
from eventsourcing.utils import retry


class UnpipelinedApplicationRecorder(PostgresApplicationRecorder):
    """Same table, same lock, same notification ids; no pipeline on insert."""

    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def insert_events(
        self,
        stored_events: Sequence[StoredEvent],
        **kwargs: Any,  # noqa: ANN401 - the library's signature
    ) -> Sequence[int] | None:
        with self.datastore.get_connection() as conn, conn.transaction(), conn.cursor() as curs:
            self._insert_events(curs, stored_events, **kwargs)
            if not stored_events:
                return None
            self._insert_stored_events(curs, stored_events, **kwargs)
            return self._fetch_ids_after_insert_events(curs, stored_events, **kwargs)
