"""`ContextSnapshots` in a Postgres table: the newest snapshot of each session's folded
log (`application/context_snapshots.py`), one row a session."""

from __future__ import annotations

from uuid import UUID

from eventsourcing.postgres import PostgresDatastore
from psycopg import sql

TABLE = "tokendance_context_snapshots"


class PostgresContextSnapshots:
    """One row a session: a newer snapshot replaces an older one, never the reverse."""

    def __init__(self, datastore: PostgresDatastore, *, table: str = TABLE) -> None:
        self.datastore = datastore
        self.table = sql.Identifier(table)

    def create_table(self) -> None:
        statement = sql.SQL(
            "CREATE TABLE IF NOT EXISTS {table} ("
            "session_id uuid PRIMARY KEY, version bigint NOT NULL, data bytea NOT NULL)"
        ).format(table=self.table)
        with self.datastore.get_connection() as conn, conn.transaction():
            conn.execute(statement)

    def latest(self, session_id: UUID) -> tuple[int, bytes] | None:
        query = sql.SQL("SELECT version, data FROM {table} WHERE session_id = %s").format(
            table=self.table
        )
        with self.datastore.get_connection() as conn:
            row = conn.execute(query, (session_id,)).fetchone()
        return None if row is None else (int(row["version"]), bytes(row["data"]))

    def keep(self, session_id: UUID, version: int, data: bytes) -> None:
        statement = sql.SQL(
            "INSERT INTO {table} (session_id, version, data) VALUES (%s, %s, %s) "
            "ON CONFLICT (session_id) DO UPDATE SET version = EXCLUDED.version, "
            "data = EXCLUDED.data WHERE {table}.version < EXCLUDED.version"
        ).format(table=self.table)
        with self.datastore.get_connection() as conn, conn.transaction():
            conn.execute(statement, (session_id, version, data))
