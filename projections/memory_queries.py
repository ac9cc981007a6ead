"""Searching the memories read model: the SQL of a hybrid search, built per call from
the indexes each namespace has (`projections.vector_graphs`).

By meaning: a namespace with a graph of its own is walked through it; the others are
compared exactly. By words: a namespace with a words index of its own is matched through
it; the others by their own rows. The two rankings are fused by reciprocal rank.
"""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from psycopg import Cursor
from psycopg.rows import DictRow
from psycopg.sql import SQL, Composable, Composed
from psycopg.sql import Literal as SqlLiteral

from application.ports import Embedder, MemoryHit
from projections.memory_vectors import VectorTable, vector_literal
from projections.vector_graphs import WORDS, GroupIndex, ready_groups, ready_indexes

MEMORY_VECTORS = VectorTable(
    "memory_vectors", "memories", "memory_id", "text", "memories",
    ("namespace", "category", "expires_at"), graph_per="namespace", words="tsv",
    group_sizes=("memory_namespaces", "namespace", "memories"),
)  # fmt: skip
RRF_K = 60  # reciprocal rank fusion: score = sum over the two rankings of 1 / (60 + rank)
MIN_EF, MAX_EF = 40, 1000  # hnsw.ef_search bounds (pgvector allows 1..1000)
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


def search(
    curs: Cursor[DictRow],
    embedder: Embedder,
    query: str,
    namespaces: Sequence[str],
    k: int,
    categories: Sequence[str] | None,
) -> list[MemoryHit]:
    """The best `k` unexpired memories of the namespaces, by `embedder`'s vectors (the
    ready model's) and by words."""
    candidates = max(4 * k, 20)
    ready = ready_indexes(curs, MEMORY_VECTORS, [embedder.model, WORDS], namespaces)
    graphs = {group for group, model in ready if model == embedder.model}
    near, params = _near(embedder, query, namespaces, graphs, candidates, as_query=True)
    matched, by_rows = _matched(namespaces, {group for group, model in ready if model == WORDS})
    if graphs:
        curs.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(params["ef"]),))
    wanted = list(categories) if categories is not None else None
    curs.execute(
        SQL(SEARCH).format(near=near, matched=matched),
        {**params, "candidates": candidates, "query": query, "by_rows": by_rows,
         "words_max": WORDS_MAX, "k": k, "categories": wanted},
        prepare=False,
    )  # fmt: skip
    return [MemoryHit(**row) for row in curs.fetchall()]


def nearest(
    curs: Cursor[DictRow], embedder: Embedder, namespace: str, text: str
) -> tuple[UUID, float] | None:
    """The unexpired memory of `namespace` closest in meaning to `text` (a memory-to-be)."""
    graphs = ready_groups(curs, MEMORY_VECTORS, embedder.model, [namespace])
    near, params = _near(embedder, text, [namespace], graphs, 1)
    if graphs:
        curs.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(params["ef"]),))
    curs.execute(SQL(NEAREST).format(near=near), {**params, "categories": None}, prepare=False)
    row = curs.fetchone()
    return (row["memory_id"], float(row["similarity"])) if row else None


def _near(
    embedder: Embedder,
    text: str,
    namespaces: Sequence[str],
    graphs: set[str],
    wanted: int,
    *,
    as_query: bool = False,  # a search's question, or (nearest) a memory-to-be
) -> tuple[Composed, dict[str, object]]:
    """The vector candidates' query for these namespaces, and its parameters: at least
    `wanted` from each namespace walked through its own graph (those in `graphs`; the
    caller sets `hnsw.ef_search` to `ef` then), every vector of the others."""
    small = [n for n in namespaces if n not in graphs]
    names = {"dim": SqlLiteral(embedder.dimension), "model": SqlLiteral(embedder.model)}
    branches = [
        GroupIndex(MEMORY_VECTORS, n, embedder.model).scan("memory_id", embedder.dimension)
        for n in sorted(graphs)
    ] + ([SQL(EXACT).format(**names)] if small else [])
    ef = min(MAX_EF, max(MIN_EF, 2 * wanted))
    near = SQL(" UNION ALL ").join(branches) if branches else SQL(NOTHING)
    vector = embedder.embed_query(text) if as_query else embedder.embed([text])[0]
    params: dict[str, object] = {"vector": vector_literal(vector), "ef": ef, "small": small}
    return Composed([near]), params


def _matched(namespaces: Sequence[str], indexed: set[str]) -> tuple[Composed, list[str]]:
    """The words side's matches query for these namespaces, and those of them that
    have no words index of their own (not in `indexed`: searched by their rows)."""
    by_rows = [n for n in namespaces if n not in indexed]
    branches: list[Composable] = [
        SQL(WORDS_OWN).format(namespace=SqlLiteral(n)) for n in sorted(indexed)
    ]
    branches += [SQL(WORDS_ROWS)] if by_rows else []
    matched = SQL(" UNION ALL ").join(branches) if branches else SQL(NO_WORDS)
    return Composed([matched]), by_rows
