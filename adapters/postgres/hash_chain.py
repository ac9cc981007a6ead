"""The hash chain's rows in an events table (`LockedInsertRecorder` writes them): read for
verification and the audit log, the heads for anchoring, and the backfill of old rows."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from eventsourcing.postgres import PostgresApplicationRecorder
from psycopg import sql

from adapters.postgres.recorder import LockedInsertRecorder
from application.audit_chain import ChainRow


@dataclass(frozen=True)
class ChainHead:
    """An aggregate's last stored event: what an external timestamp anchors."""

    originator_id: UUID
    version: int
    hash: bytes | None


class PostgresHashChain:
    """One events table's chain (the `ChainStore` of `application.audit_chain`)."""

    def __init__(self, recorder: PostgresApplicationRecorder) -> None:
        assert isinstance(recorder, LockedInsertRecorder), "only our recorder chains"
        self.datastore = recorder.datastore
        self.table = sql.Identifier(recorder.datastore.schema, recorder.events_table_name)
        self.genesis_function = sql.Identifier(
            recorder.datastore.schema, f"tokendance_chain_genesis_{recorder.events_table_name}"
        )
        self.backfill_function = sql.Identifier(
            recorder.datastore.schema, f"tokendance_chain_backfill_{recorder.events_table_name}"
        )

    def rows(self, originator_id: UUID) -> list[ChainRow]:
        query = sql.SQL(
            "SELECT originator_version, topic, state, prev_hash, hash FROM {table} "
            "WHERE originator_id = %s ORDER BY originator_version"
        ).format(table=self.table)
        with self.datastore.get_connection() as conn, conn.cursor() as curs:
            curs.execute(query, (originator_id,))
            return [
                ChainRow(
                    int(r["originator_version"]),
                    str(r["topic"]),
                    bytes(r["state"]),
                    _bytes(r["prev_hash"]),
                    _bytes(r["hash"]),
                )
                for r in curs.fetchall()
            ]

    def genesis(self, first: ChainRow) -> bytes | None:
        """What version 1 cites, by the very rule the insert follows (a database function)."""
        query = sql.SQL("SELECT {f}(%s, %s) AS genesis").format(f=self.genesis_function)
        with self.datastore.get_connection() as conn, conn.cursor() as curs:
            curs.execute(query, (first.topic, first.state))
            row = curs.fetchone()
        return None if row is None else _bytes(row["genesis"])

    def hashes(
        self, originator_id: UUID, versions: Sequence[int]
    ) -> dict[int, tuple[bytes | None, bytes | None]]:
        """(prev_hash, hash) of each of the aggregate's `versions`."""
        if not versions:
            return {}
        query = sql.SQL(
            "SELECT originator_version, prev_hash, hash FROM {table} "
            "WHERE originator_id = %s AND originator_version BETWEEN %s AND %s"
        ).format(table=self.table)
        wanted = set(versions)
        with self.datastore.get_connection() as conn, conn.cursor() as curs:
            curs.execute(query, (originator_id, min(versions), max(versions)))
            return {
                int(r["originator_version"]): (_bytes(r["prev_hash"]), _bytes(r["hash"]))
                for r in curs.fetchall()
                if int(r["originator_version"]) in wanted
            }

    def heads(self, originator_id: UUID | None = None) -> Iterator[ChainHead]:
        """The last event of each aggregate (or of one), in id order."""
        where = sql.SQL("WHERE originator_id = %s ") if originator_id else sql.SQL("")
        query = sql.SQL(
            "SELECT DISTINCT ON (originator_id) originator_id, originator_version, hash "
            "FROM {table} {where}ORDER BY originator_id, originator_version DESC"
        ).format(table=self.table, where=where)
        params = (originator_id,) if originator_id else ()
        with self.datastore.get_connection() as conn, conn.cursor() as curs:
            curs.execute(query, params)
            for r in curs.fetchall():
                yield ChainHead(r["originator_id"], int(r["originator_version"]), _bytes(r["hash"]))

    def originators(self) -> list[UUID]:
        query = sql.SQL("SELECT DISTINCT originator_id FROM {table} ORDER BY 1").format(
            table=self.table
        )
        with self.datastore.get_connection() as conn, conn.cursor() as curs:
            curs.execute(query)
            return [r["originator_id"] for r in curs.fetchall()]

    def backfill(self, batch: int = 500) -> int:
        """Chain every unhashed event, in batches of `batch` (each its own transaction under
        the table lock the inserts take); how many it chained. Resumable and idempotent:
        a hashed event is never rewritten."""
        call = sql.SQL("SELECT last_id, chained FROM {f}(%s, %s)").format(f=self.backfill_function)
        after, total = 0, 0
        while True:
            with self.datastore.get_connection() as conn, conn.cursor() as curs:
                curs.execute(call, (batch, after))
                row = curs.fetchone()
            if row is None or row["last_id"] is None:
                return total
            after, total = int(row["last_id"]), total + int(row["chained"])


def _row(r: dict[str, Any]) -> ChainRow:
    return ChainRow(
        int(r["originator_version"]), str(r["topic"]), bytes(r["state"]),
        _bytes(r["prev_hash"]), _bytes(r["hash"]),
    )  # fmt: skip


def _bytes(value: Any) -> bytes | None:  # noqa: ANN401 - a row's bytea (bytes or memoryview)
    return None if value is None else bytes(value)
