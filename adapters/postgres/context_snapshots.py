"""`ContextSnapshots` in Postgres (`application/context_snapshots.py`): a head row per
session, replaced by a newer one, and the segments of the conversation, each written
once; a head of a newer epoch (a compaction) drops the older epochs' segments."""

from __future__ import annotations

from collections.abc import Collection
from uuid import UUID

from eventsourcing.postgres import PostgresDatastore
from psycopg import sql

from application.snapshot_port import KeptSnapshot, SnapshotWrite

TABLE = "tokendance_context_snapshots"
SEGMENTS = "tokendance_context_segments"


class PostgresContextSnapshots:
    """One head row a session (never replaced by an older one), and its segments."""

    def __init__(
        self, datastore: PostgresDatastore, *, table: str = TABLE, segments: str = SEGMENTS
    ) -> None:
        self.datastore = datastore
        self.names = {"heads": sql.Identifier(table), "segments": sql.Identifier(segments)}

    def _sql(self, text: str) -> sql.Composed:
        return sql.SQL(text).format(**self.names)

    def create_table(self) -> None:
        statements = (
            "CREATE TABLE IF NOT EXISTS {heads} ("
            "session_id uuid PRIMARY KEY, version bigint NOT NULL, data bytea NOT NULL)",
            # Before segments, a head held the whole conversation (its format is refused).
            "ALTER TABLE {heads} ADD COLUMN IF NOT EXISTS epoch bigint NOT NULL DEFAULT 0",
            "CREATE TABLE IF NOT EXISTS {segments} ("
            "session_id uuid NOT NULL, epoch bigint NOT NULL, through bigint NOT NULL, "
            "data bytea NOT NULL, PRIMARY KEY (session_id, epoch, through))",
        )
        with self.datastore.get_connection() as conn, conn.transaction():
            for statement in statements:
                conn.execute(self._sql(statement))

    def latest(self, session_id: UUID, have: Collection[int] = ()) -> KeptSnapshot | None:
        query = self._sql(
            "SELECT h.version, h.data AS head, s.through, s.data AS segment FROM {heads} h "
            "LEFT JOIN {segments} s ON s.session_id = h.session_id AND s.epoch = h.epoch "
            "AND NOT s.through = ANY(%s::bigint[]) WHERE h.session_id = %s"
        )
        with self.datastore.get_connection() as conn:
            rows = conn.execute(query, (list(have), session_id), binary=True).fetchall()
        if not rows:
            return None
        segments = {
            int(row["through"]): bytes(row["segment"]) for row in rows if row["through"] is not None
        }
        return KeptSnapshot(int(rows[0]["version"]), bytes(rows[0]["head"]), segments)

    def keep(self, session_id: UUID, snapshot: SnapshotWrite) -> None:
        with self.datastore.get_connection() as conn, conn.transaction():
            if snapshot.segment is not None:
                conn.execute(
                    self._sql(
                        "INSERT INTO {segments} (session_id, epoch, through, data) "
                        "VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING"
                    ),
                    (session_id, snapshot.epoch, snapshot.segment.through, snapshot.segment.data),
                )
            conn.execute(
                self._sql(
                    "INSERT INTO {heads} (session_id, version, epoch, data) "
                    "VALUES (%s, %s, %s, %s) ON CONFLICT (session_id) DO UPDATE SET "
                    "version = EXCLUDED.version, epoch = EXCLUDED.epoch, data = EXCLUDED.data "
                    "WHERE {heads}.version < EXCLUDED.version"
                ),
                (session_id, snapshot.version, snapshot.epoch, snapshot.head),
            )
            if snapshot.epoch == 0:
                return  # no compaction yet: no older epoch
            # The compaction a new epoch begins with is in the log: what it replaced goes.
            conn.execute(
                self._sql("DELETE FROM {segments} WHERE session_id = %s AND epoch < %s"),
                (session_id, snapshot.epoch),
            )
