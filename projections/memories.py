"""The memories read model: every namespace's memories as they are now, searchable by
meaning (pgvector, the ready embedding model's vectors) and by words (Postgres full
text, 'simple' config so any language works), fused by reciprocal rank.

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
from psycopg.sql import SQL, Composable, Composed
from psycopg.sql import Literal as SqlLiteral

from application.ports import MemoryHit
from domain.accounts import ACCOUNT_EVENT_CLASSES
from domain.memories import MEMORY_EVENT_CLASSES, MemoryEvent, MemoryNamespace
from projections.memory_vectors import EmbeddingModels, VectorTable, vector_literal
from projections.vector_graphs import CREATE_STATEMENTS as GRAPH_STATEMENTS
from projections.vector_graphs import WORDS, GroupIndex, ready_groups
from projections.view import Event, View

TABLES = ("memory_namespaces", "memories", "memory_vectors")
RRF_K = 60  # reciprocal rank fusion: score = sum over the two rankings of 1 / (60 + rank)
MIN_EF, MAX_EF = 40, 1000  # hnsw.ef_search bounds (pgvector allows 1..1000)
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
HIT_COLUMNS = (
    "m.memory_id, m.namespace, m.category, m.text, f.score::float8 AS score, f.similarity, "
    "m.source_session_id, m.source_version, m.source_document"
)
LIVE = "(m.expires_at IS NULL OR m.expires_at > now())"
WANTED = f"{LIVE} AND (%(categories)s::text[] IS NULL OR m.category = ANY(%(categories)s))"
WORDS_MAX = 1000  # matches ranked by words per branch: a common word's are many, and slow
# Candidates by meaning (`near`) and by words (`matched`), each from the branches the
# namespaces' indexes allow; then each side ranked and the two fused.
SEARCH = f"""
WITH near AS MATERIALIZED ({{near}}),
vec AS (
    SELECT n.memory_id, 1 - n.distance AS similarity,
           row_number() OVER (ORDER BY n.distance, n.memory_id) AS rank
    FROM near n JOIN memories m USING (memory_id) WHERE {WANTED}
    ORDER BY n.distance, n.memory_id LIMIT %(candidates)s
),
matched AS MATERIALIZED ({{matched}}),
words AS (
    SELECT memory_id, row_number() OVER (ORDER BY score DESC, memory_id) AS rank
    FROM matched ORDER BY rank LIMIT %(candidates)s
),
fused AS (
    SELECT memory_id, sum(1.0 / ({RRF_K} + rank)) AS score, max(similarity) AS similarity
    FROM (SELECT memory_id, rank, similarity FROM vec
          UNION ALL SELECT memory_id, rank, NULL FROM words) AS ranked
    GROUP BY memory_id
)
SELECT {HIT_COLUMNS} FROM fused f JOIN memories m USING (memory_id)
ORDER BY f.score DESC, m.memory_id LIMIT %(k)s
"""
NEAREST = f"""
WITH near AS MATERIALIZED ({{near}})
SELECT n.memory_id, 1 - n.distance AS similarity FROM near n JOIN memories m USING (memory_id)
WHERE {LIVE} ORDER BY n.distance, n.memory_id LIMIT 1
"""
# By meaning: a namespace with a graph of its own through it (`GroupIndex.scan`); the
# rest compared exactly, filtered before they are sorted (their vectors carry the filters).
EXACT = f"""(SELECT memory_id, (embedding::vector({{dim}})) <=> %(vector)s::vector({{dim}})
    AS distance FROM memory_vectors m
    WHERE model = {{model}} AND namespace = ANY(%(small)s) AND {WANTED}
    ORDER BY distance LIMIT %(ef)s)"""
NOTHING = "SELECT NULL::uuid AS memory_id, NULL::float8 AS distance WHERE false"
# By words: a namespace with a words index of its own through it (named literally, so the
# planner can use that partial index); the rest by their own rows (OFFSET 0 keeps the
# planner from reading a common word's posting list across every namespace instead).
WORDS_OWN = f"""(SELECT m.memory_id, ts_rank_cd(m.tsv, q) AS score FROM (
    SELECT memory_id, tsv FROM memories m WHERE m.namespace = {{namespace}}
    AND m.tsv @@ websearch_to_tsquery('simple', %(query)s) AND {WANTED} LIMIT %(words_max)s
) AS m, websearch_to_tsquery('simple', %(query)s) AS q)"""
WORDS_ROWS = f"""(SELECT m.memory_id, ts_rank_cd(m.tsv, q) AS score FROM (
    SELECT memory_id, tsv FROM (
        SELECT memory_id, tsv, category, expires_at FROM memories
        WHERE namespace = ANY(%(by_rows)s) OFFSET 0
    ) AS m WHERE m.tsv @@ websearch_to_tsquery('simple', %(query)s) AND {WANTED}
    LIMIT %(words_max)s
) AS m, websearch_to_tsquery('simple', %(query)s) AS q)"""
NO_WORDS = "SELECT NULL::uuid AS memory_id, NULL::float4 AS score WHERE false"


class MemoriesView(View):
    """Memories by namespace, with their vectors and words indexed for search."""

    name = "memories"
    VECTORS: ClassVar[VectorTable] = VectorTable(
        "memory_vectors", "memories", "memory_id", "text", "memories",
        ("namespace", "category", "expires_at"), graph_per="namespace", words="tsv",
        group_sizes=("memory_namespaces", "namespace", "memories"),
    )  # fmt: skip
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
            case MemoryNamespace.MemoryRemembered():
                _insert(curs, event)
                self._write_vectors(curs, event.memory_id, event.text)
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
            case MemoryNamespace.MemoryForgotten(memory_id=memory_id):
                curs.execute("DELETE FROM memory_vectors WHERE memory_id = %s", (memory_id,))
                curs.execute("DELETE FROM memories WHERE memory_id = %s", (memory_id,))
                _count(curs, event.originator_id, -1)
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
        with self._snapshot() as curs:
            candidates = max(4 * k, 20)
            near, params = self._near(curs, query, namespaces, candidates, as_query=True)
            matched, by_rows = self._matched(curs, namespaces)
            wanted = list(categories) if categories is not None else None
            curs.execute(
                SQL(SEARCH).format(near=near, matched=matched),
                {**params, "candidates": candidates, "query": query, "by_rows": by_rows,
                 "words_max": WORDS_MAX, "k": k, "categories": wanted},
                prepare=False,
            )  # fmt: skip
            return [MemoryHit(**row) for row in curs.fetchall()]

    def nearest(self, namespace: str, text: str) -> tuple[UUID, float] | None:
        """The unexpired memory of `namespace` closest in meaning to `text`."""
        with self._snapshot() as curs:
            near, params = self._near(curs, text, [namespace], 1)
            curs.execute(
                SQL(NEAREST).format(near=near), {**params, "categories": None}, prepare=False
            )
            row = curs.fetchone()
        return (row["memory_id"], float(row["similarity"])) if row else None

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

    def _near(
        self,
        curs: Cursor[DictRow],
        text: str,
        namespaces: Sequence[str],
        wanted: int,
        *,
        as_query: bool = False,  # a search's question, or (nearest) a memory-to-be
    ) -> tuple[Composed, dict[str, object]]:
        """The vector candidates' query for these namespaces, and its parameters: at least
        `wanted` from each namespace walked through its own graph (with `hnsw.ef_search`
        set for this transaction to match), every vector of the others."""
        embedder = self.models.active(curs)
        graphs = ready_groups(curs, self.VECTORS, embedder.model, namespaces)
        small = [n for n in namespaces if n not in graphs]
        names = {"dim": SqlLiteral(embedder.dimension), "model": SqlLiteral(embedder.model)}
        branches = [
            GroupIndex(self.VECTORS, n, embedder.model).scan("memory_id", embedder.dimension)
            for n in sorted(graphs)
        ] + ([SQL(EXACT).format(**names)] if small else [])
        ef = min(MAX_EF, max(MIN_EF, 2 * wanted))
        if graphs:
            curs.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef),))
        near = SQL(" UNION ALL ").join(branches) if branches else SQL(NOTHING)
        vector = embedder.embed_query(text) if as_query else embedder.embed([text])[0]
        params: dict[str, object] = {"vector": vector_literal(vector), "ef": ef, "small": small}
        return Composed([near]), params

    def _matched(
        self, curs: Cursor[DictRow], namespaces: Sequence[str]
    ) -> tuple[Composed, list[str]]:
        """The words side's matches query for these namespaces, and those of them that
        have no words index of their own (searched by their rows)."""
        indexed = ready_groups(curs, self.VECTORS, WORDS, namespaces)
        by_rows = [n for n in namespaces if n not in indexed]
        branches: list[Composable] = [
            SQL(WORDS_OWN).format(namespace=SqlLiteral(n)) for n in sorted(indexed)
        ]
        branches += [SQL(WORDS_ROWS)] if by_rows else []
        matched = SQL(" UNION ALL ").join(branches) if branches else SQL(NO_WORDS)
        return Composed([matched]), by_rows

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
        offset: int,
        include_expired: bool = False,
    ) -> tuple[list[MemoryRow], int]:
        """A page of the namespaces' memories, newest first, and how many there are."""
        where = (
            "namespace = ANY(%(namespaces)s) "
            "AND (%(category)s::text IS NULL OR category = %(category)s) "
            "AND (%(all)s OR expires_at IS NULL OR expires_at > now())"
        )
        params = {"namespaces": list(namespaces), "category": category, "all": include_expired}
        with self.datastore.transaction() as curs:
            curs.execute(
                f"SELECT {COLUMNS} FROM memories WHERE {where} "  # noqa: S608
                "ORDER BY created_at DESC, memory_id DESC LIMIT %(limit)s OFFSET %(offset)s",
                {**params, "limit": limit, "offset": offset},
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


def _count(curs: Cursor[DictRow], namespace_id: UUID, change: int) -> None:
    curs.execute(
        "UPDATE memory_namespaces SET memories = memories + %s WHERE namespace_id = %s",
        (change, namespace_id),
    )
