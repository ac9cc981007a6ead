"""Where a user's personal content was copied in Postgres, and its removal (erasure).

The stored events hold it sealed (`sealed:v1:<user id>:...`), so they are found by that
prefix in their bytes and stay as they are. The copies opened from them are removed:
the episodes of the user's messages and their vectors, the memories sealed for the user
and their vectors, the aggregate snapshots of every aggregate that held sealed content
(a snapshot holds its state in plain text; the aggregate folds again from its events),
the user's idempotency records (a stored answer may repeat a message) and its failed
logins (keyed by email). All in one transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from eventsourcing.persistence import StoredEvent
from eventsourcing.postgres import PostgresApplicationRecorder, PostgresDatastore
from eventsourcing.utils import get_topic
from psycopg import sql

from adapters.personal_keys import PREFIX
from application.erasure import Copies
from domain.accounts import TokenFamily

TOKEN_FAMILY_STARTED = get_topic(TokenFamily.TokenFamilyStarted)


class PostgresPersonalCopies:
    def __init__(
        self,
        datastore: PostgresDatastore,
        events: Sequence[PostgresApplicationRecorder],  # the sessions', the accounts' last
        snapshot_tables: Sequence[str],
    ) -> None:
        self.datastore = datastore
        self.events = events
        self.snapshot_tables = snapshot_tables

    def sealed_events(self, user_id: UUID) -> list[StoredEvent]:
        """Every stored event (of either log) holding content sealed for the user."""
        marker = f"{PREFIX}{user_id}:".encode()
        found: list[StoredEvent] = []
        with self.datastore.transaction(commit=False) as curs:
            for recorder in self.events:
                table = sql.Identifier(recorder.datastore.schema, recorder.events_table_name)
                curs.execute(
                    sql.SQL(
                        "SELECT originator_id, originator_version, topic, state FROM {} "
                        "WHERE position(%s::bytea in state) > 0 "
                        "ORDER BY originator_id, originator_version"
                    ).format(table),
                    (marker,),
                )
                found.extend(
                    StoredEvent(r["originator_id"], r["originator_version"], r["topic"],
                                bytes(r["state"]))
                    for r in curs.fetchall()
                )  # fmt: skip
        return found

    def logins(self, user_id: UUID) -> list[UUID]:
        """The token families the user started (their ids, from the accounts' log)."""
        accounts = self.events[-1]
        table = sql.Identifier(accounts.datastore.schema, accounts.events_table_name)
        with self.datastore.transaction(commit=False) as curs:
            curs.execute(
                sql.SQL(
                    "SELECT originator_id FROM {} WHERE topic = %s "
                    "AND position(%s::bytea in state) > 0"
                ).format(table),
                (TOKEN_FAMILY_STARTED, user_id.hex.encode()),
            )
            return [r["originator_id"] for r in curs.fetchall()]

    def remove(self, user_id: UUID, email: str | None, copies: Copies) -> None:
        with self.datastore.transaction(commit=True) as curs:
            for session_id, version in copies.messages:
                curs.execute(
                    "DELETE FROM episode_vectors WHERE item_id IN (SELECT item_id FROM "
                    "episodes WHERE session_id = %s AND version = %s)",
                    (session_id, version),
                )
                curs.execute(
                    "DELETE FROM episodes WHERE session_id = %s AND version = %s",
                    (session_id, version),
                )
            memory_ids = list(copies.memories)
            curs.execute("DELETE FROM memory_vectors WHERE memory_id = ANY(%s)", (memory_ids,))
            curs.execute(
                "WITH gone AS (DELETE FROM memories WHERE memory_id = ANY(%s) "
                "RETURNING namespace) UPDATE memory_namespaces n "
                "SET memories = n.memories - c.count "
                "FROM (SELECT namespace, count(*) FROM gone GROUP BY namespace) c "
                "WHERE n.namespace = c.namespace",
                (memory_ids,),
            )
            for table in self.snapshot_tables:
                curs.execute(
                    sql.SQL("DELETE FROM {} WHERE originator_id = ANY(%s)").format(
                        sql.Identifier(table)
                    ),
                    (list(copies.aggregates),),
                )
            # Made by the API on first use: a database that never served has neither.
            curs.execute("SELECT to_regclass('idempotency_keys') AS i, "
                         "to_regclass('login_failures') AS l")  # fmt: skip
            made = curs.fetchone()
            assert made is not None
            if made["i"] is not None:
                curs.execute(
                    "DELETE FROM idempotency_keys WHERE position(%s in user_key) > 0",
                    (str(user_id),),
                )
            if made["l"] is not None and email is not None:
                curs.execute("DELETE FROM login_failures WHERE key = %s", (f"account:{email}",))
