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
from eventsourcing.utils import get_topic, retry
from psycopg import Connection
from psycopg.sql import SQL, Composable, Identifier, Literal

from application.audit_chain import GENESIS
from domain.session import AgentSession
from projections.pg_arrays import array_of

# A session's first event, which names the session it was forked from (if any).
FORK_TOPIC = get_topic(AgentSession.SessionStarted)

# The hash chain (`application/audit_chain.py`): each event's `hash` is SHA-256 over its
# `prev_hash` (the aggregate's hash at version - 1, or the genesis), its topic (UTF-8),
# its version (8 bytes, big-endian) and its state, computed under the table lock.
CHAIN_COLUMNS = """DO $do$ BEGIN
    IF NOT EXISTS (
        SELECT 1 FROM information_schema.columns
        WHERE table_schema = {schema_name} AND table_name = {table_name} AND column_name = 'hash'
    ) THEN
        ALTER TABLE {schema}.{table}
            ADD COLUMN IF NOT EXISTS prev_hash bytea, ADD COLUMN IF NOT EXISTS hash bytea;
        -- What the backfill has left to chain: empty once it has run.
        CREATE INDEX IF NOT EXISTS {unhashed} ON {schema}.{table} (notification_id)
            WHERE hash IS NULL;
    END IF;
END $do$"""

# The `prev_hash` of an aggregate's version 1: 32 zero bytes, except a forked session's
# (its `SessionStarted` names `parent_id` and `parent_version`), which cites the parent's
# hash at that version (NULL while the parent is unhashed: the fork is then chained by the
# backfill after its parent).
GENESIS_FUNCTION = """CREATE OR REPLACE FUNCTION {schema}.{genesis}(topic text, state bytea)
RETURNS bytea LANGUAGE plpgsql STABLE AS $body$
DECLARE
    doc jsonb;
    found bytea;
BEGIN
    IF topic IS DISTINCT FROM {fork_topic} OR length(state) = 0 OR get_byte(state, 0) <> 123
    THEN
        RETURN {zeros};
    END IF;
    -- jsonb refuses an escaped U+0000 anywhere (a title may hold one): drop those first
    doc := replace(convert_from(state, 'UTF8'), E'\\\\u0000', '')::jsonb;
    IF jsonb_typeof(doc -> 'parent_id') IS DISTINCT FROM 'object'
        OR jsonb_typeof(doc -> 'parent_version') IS DISTINCT FROM 'number' THEN
        RETURN {zeros};
    END IF;
    SELECT e.hash INTO found FROM {schema}.{table} e
    WHERE e.originator_id = (doc -> 'parent_id' ->> '_data_')::{originator_id_type}
        AND e.originator_version = (doc ->> 'parent_version')::bigint;
    RETURN found;
END;
$body$"""

INSERT_FUNCTION = """CREATE OR REPLACE FUNCTION {schema}.{function}(
    ids {originator_id_type}[], versions bigint[], topics text[], states bytea[]
) RETURNS SETOF bigint LANGUAGE plpgsql AS $body$
DECLARE
    prevs bytea[] := array_fill(NULL::bytea, ARRAY[cardinality(ids)]);
    hashes bytea[] := prevs;
    prev bytea;
    i int;
    j int;
BEGIN
    SET LOCAL lock_timeout = {lock_timeout};
    LOCK TABLE {schema}.{table} IN EXCLUSIVE MODE;
    NOTIFY {channel};
    FOR i IN 1 .. cardinality(ids) LOOP
        j := i - 1;  -- the previous version in this insert (the one before, as a rule)
        WHILE j >= 1 AND NOT (ids[j] = ids[i] AND versions[j] = versions[i] - 1) LOOP
            j := j - 1;
        END LOOP;
        IF j >= 1 THEN
            prev := hashes[j];
        ELSIF versions[i] = 1 THEN
            prev := {schema}.{genesis}(topics[i], states[i]);
        ELSE  -- NULL if that event is unhashed (the backfill chains it, then this)
            prev := (SELECT e.hash FROM {schema}.{table} e
                     WHERE e.originator_id = ids[i] AND e.originator_version = versions[i] - 1);
        END IF;
        prevs[i] := prev;
        hashes[i] := sha256(
            prev || convert_to(topics[i], 'UTF8') || int8send(versions[i]) || states[i]
        );
    END LOOP;
    RETURN QUERY
        INSERT INTO {schema}.{table}
            (originator_id, originator_version, topic, state, prev_hash, hash)
        SELECT * FROM unnest(ids, versions, topics, states, prevs, hashes)
        RETURNING notification_id;
END;
$body$"""

# One batch of the backfill, under the table lock the inserts take: the unhashed events
# after notification id `after` (at most `batch`), each with the rest of its aggregate's
# unhashed events, chained from the hash before them. An aggregate whose predecessor is
# unhashed or missing is left alone. Returns the last id looked at (NULL: none left) and
# how many events it chained.
BACKFILL_FUNCTION = """CREATE OR REPLACE FUNCTION {schema}.{backfill}(
    batch int, after bigint, OUT last_id bigint, OUT chained bigint
) LANGUAGE plpgsql AS $body$
DECLARE
    candidate record;
    r record;
    prev bytea;
    h bytea;
    expected bigint;
BEGIN
    SET LOCAL lock_timeout = {lock_timeout};
    LOCK TABLE {schema}.{table} IN EXCLUSIVE MODE;
    chained := 0;
    FOR candidate IN
        SELECT e.notification_id, e.originator_id, e.originator_version
        FROM {schema}.{table} e
        WHERE e.hash IS NULL AND e.notification_id > after
        ORDER BY e.notification_id LIMIT batch
    LOOP
        last_id := candidate.notification_id;
        CONTINUE WHEN (SELECT e.hash FROM {schema}.{table} e
                       WHERE e.originator_id = candidate.originator_id
                         AND e.originator_version = candidate.originator_version) IS NOT NULL;
        IF candidate.originator_version = 1 THEN
            prev := (SELECT {schema}.{genesis}(e.topic, e.state) FROM {schema}.{table} e
                     WHERE e.originator_id = candidate.originator_id
                       AND e.originator_version = 1);
        ELSE
            prev := (SELECT e.hash FROM {schema}.{table} e
                     WHERE e.originator_id = candidate.originator_id
                       AND e.originator_version = candidate.originator_version - 1);
        END IF;
        CONTINUE WHEN prev IS NULL;
        expected := candidate.originator_version;
        FOR r IN
            SELECT e.originator_version, e.topic, e.state, e.hash FROM {schema}.{table} e
            WHERE e.originator_id = candidate.originator_id
                AND e.originator_version >= candidate.originator_version
            ORDER BY e.originator_version
        LOOP
            EXIT WHEN r.originator_version <> expected OR r.hash IS NOT NULL;
            h := sha256(prev || convert_to(r.topic, 'UTF8') || int8send(r.originator_version)
                        || r.state);
            UPDATE {schema}.{table} SET prev_hash = prev, hash = h
            WHERE originator_id = candidate.originator_id
                AND originator_version = r.originator_version;
            prev := h;
            expected := expected + 1;
            chained := chained + 1;
        END LOOP;
    END LOOP;
END;
$body$"""


class LockedInsertRecorder(PostgresApplicationRecorder):
    """Same table, same lock, same notification ids; one statement per insert."""

    def __init__(self, datastore: PostgresDatastore, **kwargs: Any) -> None:  # noqa: ANN401
        super().__init__(datastore, **kwargs)
        # Four arrays sent in binary, not an array of the library's composite type: psycopg
        # dumps a composite as text, escaping every byte of every state (0.5 ms a message).
        table = self.events_table_name
        function = Identifier(f"tokendance_append_{table}")
        schema = Identifier(datastore.schema)
        names = {
            "schema": schema,
            "table": Identifier(table),
            "originator_id_type": Identifier(datastore.originator_id_type),
            "lock_timeout": Literal(f"{datastore.lock_timeout}s"),
            "genesis": Identifier(f"tokendance_chain_genesis_{table}"),
        }
        self.backfill_function = Identifier(f"tokendance_chain_backfill_{table}")
        self.sql_create_statements += [
            SQL(CHAIN_COLUMNS).format(
                schema_name=Literal(datastore.schema),
                table_name=Literal(table),
                unhashed=Identifier(f"{table}_unhashed"),
                **names,
            ),
            SQL(GENESIS_FUNCTION).format(
                fork_topic=Literal(FORK_TOPIC), zeros=Literal(GENESIS), **names
            ),
            SQL(INSERT_FUNCTION).format(
                function=function, channel=Identifier(self.channel_name), **names
            ),
            SQL(BACKFILL_FUNCTION).format(backfill=self.backfill_function, **names),
        ]
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

    def insert_statement_bytes(self) -> bytes:
        """The insert function's call, as sent (`AsyncRecorder` sends it too)."""
        return self._call.as_bytes()

    def insert_columns(self, stored_events: Sequence[StoredEvent]) -> tuple[list[Any], ...]:
        """The insert function's four arguments: ids, versions, topics, states."""
        ids, versions, topics, states = self._columns
        return (
            ids(e.originator_id for e in stored_events),
            versions(e.originator_version for e in stored_events),
            topics(e.topic for e in stored_events),
            states(e.state for e in stored_events),
        )

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
            statement = self._render(shape, lambda: self.select_statement(*shape), conn)
            curs.execute(statement, params, prepare=True, binary=True)  # bytea as bytes
            return [
                StoredEvent(
                    r["originator_id"], r["originator_version"], r["topic"], bytes(r["state"])
                )
                for r in curs.fetchall()
            ]

    def select_statement(self, gt: bool, lte: bool, desc: bool, limit: bool) -> Composable:
        """The library's read of one aggregate's events, with the bounds given."""
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
        columns = self.insert_columns(stored_events)
        with self.datastore.get_connection() as conn, conn.cursor() as curs:
            assert conn.autocommit  # the call is its own transaction
            curs.execute(self._render("insert", lambda: self._call, conn), columns, prepare=True)
            # Ids are drawn in the order the rows are inserted, which is their order.
            return sorted(int(r["id"]) for r in curs.fetchall())
