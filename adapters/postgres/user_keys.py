"""The users' personal keys in Postgres (`adapters.personal_keys.KeyStore`).

One row per user: its AES key sealed by the master key, until erasure sets it to NULL
and notes when and by whom (the row stays: nothing is sealed for an erased user again).
After a destruction the table is vacuumed, so the old row version leaves the heap.
"""

from __future__ import annotations

from uuid import UUID

from eventsourcing.postgres import PostgresDatastore

from adapters.personal_keys import KeyRow

CREATE = """CREATE TABLE IF NOT EXISTS tokendance_user_keys (
    user_id uuid PRIMARY KEY,
    wrapped text,                 -- base64 AES key sealed by the master key; NULL: erased
    created_at timestamptz NOT NULL DEFAULT now(),
    erased_at timestamptz,
    erased_by uuid
)"""


class PostgresKeyStore:
    def __init__(self, datastore: PostgresDatastore) -> None:
        self.datastore = datastore

    def create_table(self) -> None:
        with self.datastore.transaction(commit=True) as curs:
            curs.execute(CREATE)

    def load(self, user_id: UUID) -> KeyRow | None:
        with self.datastore.transaction(commit=False) as curs:
            curs.execute("SELECT wrapped FROM tokendance_user_keys WHERE user_id = %s", (user_id,))
            row = curs.fetchone()
        return None if row is None else KeyRow(row["wrapped"])

    def create(self, user_id: UUID, wrapped: str) -> None:
        with self.datastore.transaction(commit=True) as curs:
            curs.execute(
                "INSERT INTO tokendance_user_keys (user_id, wrapped) VALUES (%s, %s) "
                "ON CONFLICT (user_id) DO NOTHING",
                (user_id, wrapped),
            )

    def destroy(self, user_id: UUID, by: UUID | None) -> bool:
        with self.datastore.transaction(commit=True) as curs:
            curs.execute(
                "INSERT INTO tokendance_user_keys (user_id, wrapped, erased_at, erased_by) "
                "VALUES (%s, NULL, now(), %s) ON CONFLICT (user_id) DO UPDATE "
                "SET wrapped = NULL, erased_at = now(), erased_by = EXCLUDED.erased_by "
                "WHERE tokendance_user_keys.erased_at IS NULL RETURNING user_id",
                (user_id, by),
            )
            destroyed = curs.fetchone() is not None
        if destroyed:
            with self.datastore.get_connection() as conn:
                conn.autocommit = True  # VACUUM runs outside a transaction
                try:
                    conn.execute("VACUUM tokendance_user_keys")
                finally:
                    conn.autocommit = False
        return destroyed

    def wrapped_keys(self) -> list[tuple[UUID, str]]:
        """Every live key, sealed (for resealing under a new master key)."""
        with self.datastore.transaction(commit=False) as curs:
            curs.execute(
                "SELECT user_id, wrapped FROM tokendance_user_keys WHERE wrapped IS NOT NULL"
            )
            return [(r["user_id"], r["wrapped"]) for r in curs.fetchall()]

    def rewrap(self, user_id: UUID, wrapped: str) -> None:
        with self.datastore.transaction(commit=True) as curs:
            curs.execute(
                "UPDATE tokendance_user_keys SET wrapped = %s "
                "WHERE user_id = %s AND wrapped IS NOT NULL",
                (wrapped, user_id),
            )
