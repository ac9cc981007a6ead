"""The memories read model: every namespace's memories as they are now, searchable by
meaning (pgvector, the ready embedding model's vectors) and by words (Postgres full
text, 'simple' config so any language works), fused by reciprocal rank
(`projections.memory_queries`).

Fed from the accounts application's log, where memory namespaces live; the other
account events pass by. A forgotten memory's row and vectors go in the event's own
transaction, so it leaves every search at once; a rebuild gives the same rows.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import ClassVar, Literal, assert_never
from uuid import UUID

from eventsourcing.postgres import PostgresDatastore
from psycopg import Cursor
from psycopg.rows import DictRow
from psycopg.sql import SQL, Composed

from application.ports import MemoryHit
from domain.accounts import ACCOUNT_EVENT_CLASSES
from domain.memories import MEMORY_EVENT_CLASSES, MemoryEvent, MemoryNamespace
from domain.personal_data import ERASED
from projections.memory_queries import MEMORY_VECTORS, nearest, search
from projections.memory_vectors import EmbeddingModels, VectorTable, vector_literal
from projections.vector_graphs import CREATE_STATEMENTS as GRAPH_STATEMENTS
from projections.view import Event, View

TABLES = ("memory_namespaces", "memories", "memory_vectors")
AuthorKind = Literal["user", "agent"]


@dataclass(frozen=True)
class MemoryRow:
    """A memory as the read model holds it (what a listing shows)."""

    memory_id: UUID
    namespace: str
    kind: str
    scope_id: UUID
    organization_id: UUID | None
    text: str
    category: str
    source_session_id: UUID | None
    source_version: int | None
    source_document: str | None
    expires_at: datetime | None
    created_at: datetime
    created_by_kind: AuthorKind
    created_by: UUID  # a user id, or the session id of the agent
    updated_at: datetime
    updated_by_kind: AuthorKind
    updated_by: UUID
    revision: int


COLUMNS = ", ".join(MemoryRow.__dataclass_fields__)


class MemoriesView(View):
    """Memories by namespace, with their vectors and words indexed for search."""

    name = "memories"
    VECTORS: ClassVar[VectorTable] = MEMORY_VECTORS
    create_statements = (
        "CREATE EXTENSION IF NOT EXISTS vector",
        """CREATE TABLE IF NOT EXISTS memory_namespaces (
            namespace_id uuid PRIMARY KEY,
            namespace text NOT NULL UNIQUE,
            kind text NOT NULL,
            scope_id uuid NOT NULL,
            organization_id uuid,
            memories integer NOT NULL DEFAULT 0
        )""",
        """CREATE TABLE IF NOT EXISTS memories (
            memory_id uuid PRIMARY KEY,
            namespace text NOT NULL,
            kind text NOT NULL,
            scope_id uuid NOT NULL,
            organization_id uuid,
            text text NOT NULL,
            category text NOT NULL,
            source_session_id uuid,
            source_version integer,
            source_document text,
            expires_at timestamptz,
            created_at timestamptz NOT NULL,
            created_by_kind text NOT NULL,
            created_by uuid NOT NULL,
            updated_at timestamptz NOT NULL,
            updated_by_kind text NOT NULL,
            updated_by uuid NOT NULL,
            revision integer NOT NULL,
            tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED
        )""",
        "CREATE INDEX IF NOT EXISTS memories_by_namespace ON memories (namespace, created_at)",
        "CREATE INDEX IF NOT EXISTS memories_words ON memories USING gin (tsv)",
        """CREATE TABLE IF NOT EXISTS memory_vectors (
            memory_id uuid NOT NULL,
            model text NOT NULL,
            embedding vector NOT NULL,
            namespace text NOT NULL,
            category text NOT NULL,
            expires_at timestamptz,
            PRIMARY KEY (memory_id, model)
        )""",
        # Vectors written before they carried their memory's filters get them.
        """DO $$ BEGIN
            IF NOT EXISTS (SELECT 1 FROM information_schema.columns
                           WHERE table_schema = current_schema()
                           AND table_name = 'memory_vectors' AND column_name = 'category') THEN
                ALTER TABLE memory_vectors ADD COLUMN category text,
                    ADD COLUMN expires_at timestamptz;
                UPDATE memory_vectors v SET category = m.category, expires_at = m.expires_at
                    FROM memories m WHERE m.memory_id = v.memory_id;
                ALTER TABLE memory_vectors ALTER COLUMN category SET NOT NULL;
            END IF;
        END $$""",
        "CREATE INDEX IF NOT EXISTS memory_vectors_by_namespace "
        "ON memory_vectors (namespace, model)",
    )
    clear_statements = tuple(f"DELETE FROM {table}" for table in reversed(TABLES))

    def __init__(self, datastore: PostgresDatastore, models: EmbeddingModels) -> None:
        super().__init__(datastore)
        self.models = models
        statements = (*models.create_statements, *GRAPH_STATEMENTS)
        self.sql_create_statements.extend(Composed([SQL(s)]) for s in statements)

    def create_table(self) -> None:
        """The tables (the ready model is the configured one, at first); graphs come as
        namespaces grow (`GraphKeeper`)."""
        super().create_table()
        with self.datastore.transaction(commit=True) as curs:
            ready = self.models.active(curs)
            self.VECTORS.ensure_index(curs, ready.model, ready.dimension)

    def apply_event(self, curs: Cursor[DictRow], event: Event) -> None:
        if not isinstance(event, ACCOUNT_EVENT_CLASSES):
            raise TypeError(f"not an account event: {event!r}")
        if isinstance(event, MEMORY_EVENT_CLASSES):  # the rest are other views'
            self._apply(curs, event)

    def _apply(self, curs: Cursor[DictRow], event: MemoryEvent) -> None:
        match event:
            case MemoryNamespace.NamespaceCreated(kind=kind, scope_id=scope_id):
                curs.execute(
                    "INSERT INTO memory_namespaces (namespace_id, namespace, kind, scope_id, "
                    "organization_id) VALUES (%s, %s, %s, %s, %s)",
                    (event.originator_id, f"{kind}:{scope_id}", kind, scope_id,
                     event.organization_id),
                )  # fmt: skip
            case MemoryNamespace.MemoryRemembered(text=text) if text == ERASED:
                pass  # its user was erased: a rebuild brings back no trace of it
            case MemoryNamespace.MemoryRemembered():
                _insert(curs, event)
                self._write_vectors(curs, event.memory_id, event.text)
            case MemoryNamespace.MemoryUpdated(text=text) if text == ERASED:
                _delete(curs, event.originator_id, event.memory_id)
            case MemoryNamespace.MemoryUpdated():
                kind, by = _author(event.user_id, event.session_id)
                curs.execute(
                    "UPDATE memories SET text = %s, category = %s, expires_at = %s, "
                    "updated_at = %s, updated_by_kind = %s, updated_by = %s, "
                    "revision = revision + 1 WHERE memory_id = %s",
                    (event.text, event.category, event.expires_at, event.timestamp, kind, by,
                     event.memory_id),
                )  # fmt: skip
                self._write_vectors(curs, event.memory_id, event.text)
            case MemoryNamespace.SourceNoted():
                pass  # the namespace's own bookkeeping: no memory changed
            case MemoryNamespace.MemoryForgotten(memory_id=memory_id):
                _delete(curs, event.originator_id, memory_id)
            case _:
                assert_never(event)

    def _write_vectors(self, curs: Cursor[DictRow], memory_id: UUID, text: str) -> None:
        """A vector of each model being written; a vector of any other model is of an
        old text (a re-embed that began meanwhile writes that one itself)."""
        embedders = self.models.to_write(curs)
        for embedder in embedders:
            [vector] = self.models.vectors(curs, embedder, [text])
            curs.execute(
                "INSERT INTO memory_vectors (memory_id, model, embedding, namespace, category, "
                "expires_at) SELECT memory_id, %s, %s::vector, namespace, category, expires_at "
                "FROM memories WHERE memory_id = %s ON CONFLICT (memory_id, model) DO UPDATE "
                "SET embedding = EXCLUDED.embedding, category = EXCLUDED.category, "
                "expires_at = EXCLUDED.expires_at",
                (embedder.model, vector_literal(vector), memory_id),
            )
        curs.execute(
            "DELETE FROM memory_vectors WHERE memory_id = %s AND NOT model = ANY(%s)",
            (memory_id, [e.model for e in embedders]),
        )

    # -- the index: search and nearest (`MemoryIndex`) --------------------------------

    def search(
        self,
        query: str,
        namespaces: Sequence[str],
        *,
        k: int,
        categories: Sequence[str] | None = None,
    ) -> list[MemoryHit]:
        """The best `k` unexpired memories of the namespaces: meaning and words fused."""
        # Nothing to find (a user who has kept no memory yet, say): one plain read, and
        # no snapshot to set up nor query to embed.
        with self.datastore.get_connection() as conn:
            held = conn.execute(
                "SELECT coalesce(sum(memories), 0) AS n FROM memory_namespaces "
                "WHERE namespace = ANY(%s)",
                (list(namespaces),),
            ).fetchone()
        if held is None or not held["n"]:
            return []
        with self._snapshot() as curs:
            return search(curs, self.models.active(curs), query, namespaces, k, categories)

    def nearest(self, namespace: str, text: str) -> tuple[UUID, float] | None:
        """The unexpired memory of `namespace` closest in meaning to `text`."""
        with self._snapshot() as curs:
            return nearest(curs, self.models.active(curs), namespace, text)

    @contextmanager
    def _snapshot(self) -> Iterator[Cursor[DictRow]]:
        # One snapshot: the ready model read first and its vectors are of the same moment,
        # even if a re-embed flips models meanwhile. Pipelined: a round trip per answer read.
        with (
            self.datastore.get_connection() as conn,
            conn.pipeline(),
            conn.transaction(),
            conn.cursor() as curs,
        ):
            curs.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            yield curs

    # -- reads for the API and tests -------------------------------------------------

    def locate(self, memory_id: UUID) -> str | None:
        """The namespace holding the memory, or None if no namespace does."""
        with self.datastore.get_connection() as conn:
            row = conn.execute(
                "SELECT namespace FROM memories WHERE memory_id = %s", (memory_id,)
            ).fetchone()
        return str(row["namespace"]) if row else None

    def listing(
        self,
        namespaces: Sequence[str],
        *,
        category: str | None = None,
        limit: int,
        after: tuple[datetime, UUID] | None = None,
        include_expired: bool = False,
    ) -> tuple[list[MemoryRow], int]:
        """A page of the namespaces' memories, newest first, after the (created_at,
        memory_id) `after`; and how many there are."""
        where = (
            "namespace = ANY(%(namespaces)s) "
            "AND (%(category)s::text IS NULL OR category = %(category)s) "
            "AND (%(all)s OR expires_at IS NULL OR expires_at > now())"
        )
        params = {"namespaces": list(namespaces), "category": category, "all": include_expired}
        page = where if after is None else where + " AND (created_at, memory_id) < (%(at)s, %(id)s)"
        at, memory_id = after or (None, None)
        with self.datastore.transaction() as curs:
            curs.execute(
                f"SELECT {COLUMNS} FROM memories WHERE {page} "  # noqa: S608
                "ORDER BY created_at DESC, memory_id DESC LIMIT %(limit)s",
                {**params, "limit": limit, "at": at, "id": memory_id},
            )
            rows = [MemoryRow(**r) for r in curs.fetchall()]
            curs.execute(f"SELECT count(*) AS n FROM memories WHERE {where}", params)  # noqa: S608
            counted = curs.fetchone()
        return rows, int(counted["n"]) if counted else 0

    def all_rows(self) -> dict[str, list[dict[str, object]]]:
        """Every table's rows, ordered (for comparing a rebuilt view with the live one)."""
        with self.datastore.get_connection() as conn:
            return {
                table: list(conn.execute(f"SELECT * FROM {table} ORDER BY 1, 2").fetchall())
                for table in TABLES
            }


def _author(user_id: UUID | None, session_id: UUID | None) -> tuple[AuthorKind, UUID]:
    if user_id is not None:
        return "user", user_id
    if session_id is not None:
        return "agent", session_id
    raise ValueError("a memory event says who did it: a user or the agent of a session")


def _insert(curs: Cursor[DictRow], e: MemoryNamespace.MemoryRemembered) -> None:
    """The memory's row, with its namespace's names (none: a log without its start, and
    the NOT NULL stops the view)."""
    kind, by = _author(e.user_id, e.session_id)
    curs.execute(
        f"INSERT INTO memories ({COLUMNS}) "  # noqa: S608
        "SELECT %s, n.namespace, n.kind, n.scope_id, n.organization_id, %s, %s, %s, %s, %s, "
        "%s, %s, %s, %s, %s, %s, %s, 1 "
        "FROM (SELECT 1) AS one LEFT JOIN memory_namespaces n ON n.namespace_id = %s",
        (
            e.memory_id, e.text, e.category, e.source_session_id, e.source_version,
            e.source_document, e.expires_at, e.timestamp, kind, by, e.timestamp, kind, by,
            e.originator_id,
        ),
    )  # fmt: skip
    _count(curs, e.originator_id, 1)


def _delete(curs: Cursor[DictRow], namespace_id: UUID, memory_id: UUID) -> None:
    """The memory's rows gone, and counted out if it had one (an erased user's has not)."""
    curs.execute("DELETE FROM memory_vectors WHERE memory_id = %s", (memory_id,))
    curs.execute(
        "WITH gone AS (DELETE FROM memories WHERE memory_id = %s RETURNING memory_id) "
        "UPDATE memory_namespaces SET memories = memories - 1 "
        "WHERE namespace_id = %s AND EXISTS (SELECT 1 FROM gone)",
        (memory_id, namespace_id),
    )


def _count(curs: Cursor[DictRow], namespace_id: UUID, change: int) -> None:
    curs.execute(
        "UPDATE memory_namespaces SET memories = memories + %s WHERE namespace_id = %s",
        (change, namespace_id),
    )
