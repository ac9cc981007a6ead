"""Which blobs were uploaded to which session (a table): a chat message may cite only its
own session's uploads (the upload route: `adapters/http/routes/uploads.py`)."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from eventsourcing.postgres import PostgresDatastore


class SessionUploads:
    """The blobs uploaded to each session (a table next to the event store)."""

    CREATE = """CREATE TABLE IF NOT EXISTS session_uploads (
        session_id uuid NOT NULL,
        blob_ref text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (session_id, blob_ref)
    )"""

    def __init__(self, datastore: PostgresDatastore) -> None:
        self.datastore = datastore
        self._created = False

    def add(self, session_id: UUID, blob_ref: str) -> None:
        self._create()
        with self.datastore.get_connection() as conn:
            conn.execute(
                "INSERT INTO session_uploads (session_id, blob_ref) VALUES (%s, %s) "
                "ON CONFLICT DO NOTHING",
                (session_id, blob_ref),
            )

    def missing(self, session_id: UUID, blob_refs: Sequence[str]) -> list[str]:
        """Those of `blob_refs` that are no upload of the session."""
        # Text a blob ref could never be (NUL and all) is missing without asking Postgres.
        stray = [ref for ref in blob_refs if "\x00" in ref]
        blob_refs = [ref for ref in blob_refs if "\x00" not in ref]
        if not blob_refs:
            return stray
        self._create()
        with self.datastore.get_connection() as conn:
            rows = conn.execute(
                "SELECT blob_ref FROM session_uploads WHERE session_id = %s AND blob_ref = ANY(%s)",
                (session_id, list(blob_refs)),
            ).fetchall()
        found = {row["blob_ref"] for row in rows}
        return stray + [ref for ref in blob_refs if ref not in found]

    def _create(self) -> None:
        if not self._created:
            with self.datastore.transaction(commit=True) as curs:
                curs.execute(self.CREATE)
            self._created = True
