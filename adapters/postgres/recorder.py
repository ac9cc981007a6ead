"""The library's Postgres recorder, inserting through one function call per command.

eventsourcing inserts events in a transaction of its own statements: set the lock
timeout, lock the events table (so commit order equals notification order), notify
the channel, insert; with BEGIN and COMMIT that is six statements and round trips per
command, each with its Python cost. Here a PL/pgSQL function does the same four
things in the same order inside the one statement that calls it, which is its own
transaction: the table lock is held until that commit, exactly as before.

Not the library's own `POSTGRES_ENABLE_DB_FUNCTIONS`: its function does not lock the
table, and a tailing reader could then pass over an event that commits late. Not a
pipeline either: with an event of a few hundred kilobytes psycopg's pipeline
deadlocks (psycopg issue #685).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from eventsourcing.persistence import InterfaceError, OperationalError, StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore
from eventsourcing.utils import retry
from psycopg.sql import SQL, Identifier, Literal

INSERT_FUNCTION = """CREATE OR REPLACE FUNCTION {schema}.{function}(events {schema}.{event}[])
RETURNS SETOF bigint LANGUAGE plpgsql AS $body$
BEGIN
    SET LOCAL lock_timeout = {lock_timeout};
    LOCK TABLE {schema}.{table} IN EXCLUSIVE MODE;
    NOTIFY {channel};
    RETURN QUERY
        INSERT INTO {schema}.{table} (originator_id, originator_version, topic, state)
        SELECT originator_id, originator_version, topic, state FROM unnest(events)
        RETURNING notification_id;
END;
$body$"""


class LockedInsertRecorder(PostgresApplicationRecorder):
    """Same table, same lock, same notification ids; one statement per insert."""

    def __init__(self, datastore: PostgresDatastore, **kwargs: Any) -> None:  # noqa: ANN401
        super().__init__(datastore, **kwargs)
        function = Identifier(f"tokendance_insert_{self.events_table_name}")
        schema = Identifier(datastore.schema)
        self.sql_create_statements.append(
            SQL(INSERT_FUNCTION).format(
                schema=schema,
                function=function,
                event=Identifier(self.stored_event_type_name),
                lock_timeout=Literal(f"{datastore.lock_timeout}s"),
                table=Identifier(self.events_table_name),
                channel=Identifier(self.channel_name),
            )
        )
        self._call = SQL("SELECT * FROM {schema}.{function}(%s) AS n(id)").format(
            schema=schema, function=function
        )

    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def insert_events(
        self,
        stored_events: Sequence[StoredEvent],
        **kwargs: Any,  # noqa: ANN401 - the library's signature
    ) -> Sequence[int] | None:
        if not stored_events:
            return None
        rows = [
            self.construct_pg_stored_event(e.originator_id, e.originator_version, e.topic, e.state)
            for e in stored_events
        ]
        with self.datastore.get_connection() as conn, conn.cursor() as curs:
            assert conn.autocommit  # the call is its own transaction
            curs.execute(self._call, (rows,), prepare=True)
            # Ids are drawn in the order the rows are inserted, which is their order.
            return sorted(int(r["id"]) for r in curs.fetchall())
