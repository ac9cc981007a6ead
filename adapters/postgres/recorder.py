"""The library's Postgres recorder, inserting through one function call per command.

eventsourcing inserts events in a transaction of its own statements: set the lock
timeout, lock the events table (so commit order equals notification order), notify
the channel, insert; with BEGIN and COMMIT that is six statements and round trips per
command, each with its Python cost. Here a PL/pgSQL function does the same four
things in the same order inside the one statement that calls it, which is its own
transaction: the table lock is held until that commit, exactly as before.

Its statements are also rendered to bytes once per shape: psycopg composes an
`sql.Composed` (quoting every identifier) on each execute, which cost a chat message
about 0.5 ms for the library's event reads alone.

Not the library's own `POSTGRES_ENABLE_DB_FUNCTIONS`: its function does not lock the
table, and a tailing reader could then pass over an event that commits late. Not a
pipeline either: with an event of a few hundred kilobytes psycopg's pipeline
deadlocks (psycopg issue #685).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from eventsourcing.persistence import InterfaceError, OperationalError, StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore
from eventsourcing.utils import retry
from psycopg import Connection
from psycopg.sql import SQL, Composable, Identifier, Literal

from projections.pg_arrays import array_of

INSERT_FUNCTION = """CREATE OR REPLACE FUNCTION {schema}.{function}(
    ids {originator_id_type}[], versions bigint[], topics text[], states bytea[]
) RETURNS SETOF bigint LANGUAGE plpgsql AS $body$
BEGIN
    SET LOCAL lock_timeout = {lock_timeout};
    LOCK TABLE {schema}.{table} IN EXCLUSIVE MODE;
    NOTIFY {channel};
    RETURN QUERY
        INSERT INTO {schema}.{table} (originator_id, originator_version, topic, state)
        SELECT * FROM unnest(ids, versions, topics, states)
        RETURNING notification_id;
END;
$body$"""


class LockedInsertRecorder(PostgresApplicationRecorder):
    """Same table, same lock, same notification ids; one statement per insert."""

    def __init__(self, datastore: PostgresDatastore, **kwargs: Any) -> None:  # noqa: ANN401
        super().__init__(datastore, **kwargs)
        # Four arrays sent in binary, not an array of the library's composite type: psycopg
        # dumps a composite as text, escaping every byte of every state (0.5 ms a message).
        function = Identifier(f"tokendance_append_{self.events_table_name}")
        schema = Identifier(datastore.schema)
        self.sql_create_statements.append(
            SQL(INSERT_FUNCTION).format(
                schema=schema,
                function=function,
                originator_id_type=Identifier(datastore.originator_id_type),
                lock_timeout=Literal(f"{datastore.lock_timeout}s"),
                table=Identifier(self.events_table_name),
                channel=Identifier(self.channel_name),
            )
        )
        self._call = SQL("SELECT * FROM {schema}.{function}(%b, %b, %b, %b) AS n(id)").format(
            schema=schema, function=function
        )
        self._columns = (
            array_of(datastore.originator_id_type), array_of("int8"), array_of("text"),
            array_of("bytea"),
        )  # fmt: skip
        self._rendered: dict[object, bytes] = {}

    def _render(
        self, key: object, statement: Callable[[], Composable], conn: Connection[Any]
    ) -> bytes:
        """The statement `statement()` makes, as the bytes psycopg would send, composed
        once for `key`."""
        rendered = self._rendered.get(key)
        if rendered is None:
            rendered = self._rendered[key] = statement().as_bytes(conn)
        return rendered

    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def select_events(
        self,
        originator_id: Any,  # noqa: ANN401 - the library's signature
        *,
        gt: int | None = None,
        lte: int | None = None,
        desc: bool = False,
        limit: int | None = None,
    ) -> Sequence[StoredEvent]:
        """The library's read of one aggregate's events, with its statement kept."""
        params = [originator_id, *(v for v in (gt, lte, limit) if v is not None)]
        shape = (gt is not None, lte is not None, desc, limit is not None)
        with self.datastore.get_connection() as conn, conn.cursor() as curs:
            statement = self._render(shape, lambda: self._select_statement(*shape), conn)
            curs.execute(statement, params, prepare=True)
            return [
                StoredEvent(
                    r["originator_id"], r["originator_version"], r["topic"], bytes(r["state"])
                )
                for r in curs.fetchall()
            ]

    def _select_statement(self, gt: bool, lte: bool, desc: bool, limit: bool) -> Composable:
        statement = self.select_events_statement
        if gt:
            statement += SQL(" AND originator_version > %s")
        if lte:
            statement += SQL(" AND originator_version <= %s")
        statement += SQL(" ORDER BY originator_version " + ("DESC" if desc else "ASC"))
        if limit:
            statement += SQL(" LIMIT %s")
        return statement

    @retry((InterfaceError, OperationalError), max_attempts=10, wait=0.2)
    def insert_events(
        self,
        stored_events: Sequence[StoredEvent],
        **kwargs: Any,  # noqa: ANN401 - the library's signature
    ) -> Sequence[int] | None:
        if not stored_events:
            return None
        ids, versions, topics, states = self._columns
        columns = (
            ids(e.originator_id for e in stored_events),
            versions(e.originator_version for e in stored_events),
            topics(e.topic for e in stored_events),
            states(e.state for e in stored_events),
        )
        with self.datastore.get_connection() as conn, conn.cursor() as curs:
            assert conn.autocommit  # the call is its own transaction
            curs.execute(self._render("insert", lambda: self._call, conn), columns, prepare=True)
            # Ids are drawn in the order the rows are inserted, which is their order.
            return sorted(int(r["id"]) for r in curs.fetchall())
