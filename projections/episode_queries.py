"""The episodic search's SQL: full-text and vector candidates fused by reciprocal rank.

Each list ranks at most `candidates` of the owner's episodes on its own; an episode's
score is the sum over the lists that found it of 1 / (60 + its rank there), so an
episode both lists found beats one that a single list ranks slightly higher.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from uuid import UUID

from psycopg import Cursor
from psycopg.rows import DictRow
from psycopg.sql import SQL, Composed, Literal

RRF_K = 60  # the usual constant of reciprocal rank fusion: damps the lead of the top ranks
SNIPPET_CHARS = 200
# A hit found only by its vector must come at least this close (cosine): otherwise any
# query, however unrelated, would answer with the nearest of the user's episodes.
MIN_SIMILARITY = 0.2
# An owner with this many episodes or fewer is scanned exactly. pgvector 0.6 filters
# an HNSW scan's neighbours after the scan, so a graph scan misses a small owner's.
EXACT_MAX = 20_000
MIN_EF, MAX_EF = 40, 1000  # hnsw.ef_search bounds (pgvector allows 1..1000)
# Markdown bold, not ts_headline's default <b>: the text is the user's own and is not
# HTML-escaped, so a client that rendered the snippet as HTML would run what it holds.
HEADLINE_OPTIONS = "StartSel=**, StopSel=**, MaxWords=30, MinWords=12, ShortWord=2"

Query = tuple[Composed, list[object]]  # SQL and its parameters


@dataclass(frozen=True)
class EpisodeScope:
    """Whose episodes a search may see, and which of them: the WHERE of both lists."""

    owner_id: UUID
    workspace_id: UUID | None = None
    start: datetime | None = None  # created at or after
    end: datetime | None = None  # created before
    # The workspaces the owner may still see (None: any): a member removed from a team
    # no longer finds their own sessions there.
    workspaces: tuple[UUID, ...] | None = None

    def where(self, alias: str) -> tuple[SQL, list[object]]:
        """The conditions on rows aliased `alias` (episodes and vectors have the same
        owner, workspace and time columns), and their parameters."""
        conditions = [f"{alias}.owner_id = %s"]
        params: list[object] = [self.owner_id]
        if self.workspace_id is not None:
            conditions.append(f"{alias}.workspace_id = %s")
            params.append(self.workspace_id)
        if self.workspaces is not None:
            conditions.append(f"{alias}.workspace_id = ANY(%s)")
            params.append(list(self.workspaces))
        if self.start is not None:
            conditions.append(f"{alias}.created_at >= %s")
            params.append(self.start)
        if self.end is not None:
            conditions.append(f"{alias}.created_at < %s")
            params.append(self.end)
        return SQL(" AND ".join(conditions)), params


def by_words(scope: EpisodeScope, query: str, candidates: int) -> Query:
    """The episodes in scope that hold the query's words, best `ts_rank_cd` first."""
    where, params = scope.where("e")
    sql = SQL(
        "SELECT e.item_id, row_number() OVER (ORDER BY ts_rank_cd(e.tsv, q) DESC, "
        "e.created_at DESC, e.item_id) AS rank "
        "FROM episodes e, websearch_to_tsquery('simple', %s) q "
        "WHERE e.tsv @@ q AND {where} ORDER BY rank LIMIT %s"
    ).format(where=where)
    return sql, [query, *params, candidates]


def graph_ef(curs: Cursor[DictRow], owner_id: UUID, model: str, candidates: int) -> int | None:
    """The `hnsw.ef_search` a graph scan needs to keep `candidates` of the owner's
    vectors, or None if the owner is small enough to scan exactly (then set nothing)."""
    curs.execute(
        "SELECT count(*) AS n FROM (SELECT 1 FROM episode_vectors "
        "WHERE owner_id = %s AND model = %s LIMIT %s) owned",
        (owner_id, model, EXACT_MAX + 1),
    )
    owned = int(row["n"]) if (row := curs.fetchone()) else 0
    if owned <= EXACT_MAX:
        return None
    curs.execute("SELECT reltuples FROM pg_class WHERE oid = 'episode_vectors'::regclass")
    total = max(float(row["reltuples"]) if (row := curs.fetchone()) else 0.0, float(owned))
    ef = min(MAX_EF, max(MIN_EF, round(1.5 * candidates * total / owned)))
    curs.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef),))
    return ef


def by_meaning(
    scope: EpisodeScope,
    model: str,
    dimension: int,
    vector: str,
    candidates: int,
    ef: int | None,
) -> Query:
    """The episodes in scope nearest to `vector` (a pgvector literal of `model`), nearest
    first, closer than `MIN_SIMILARITY`: exactly, or through the model's HNSW index
    (`VectorTable.index_statement`: same cast, `model = '<id>'` as a literal) if `ef`.

    The filters are on the vectors' own copies of owner, workspace and time: no join.
    """
    where, params = scope.where("v")
    names = {
        "distance": SQL("v.embedding::vector({dim}) <=> %s::vector({dim})").format(
            dim=Literal(dimension)
        ),
        "model": Literal(model),
        "where": where,
    }
    if ef is None:  # OFFSET 0 keeps the planner from ordering by the graph index
        nearest = SQL(
            "SELECT item_id, distance FROM (SELECT v.item_id, {distance} AS distance "
            "FROM episode_vectors v WHERE v.model = {model} AND {where} OFFSET 0) scoped "
            "ORDER BY distance, item_id LIMIT %s"
        ).format(**names)
        nearest_params = [vector, *params, candidates]
    else:
        nearest = SQL(
            "SELECT item_id, distance FROM (SELECT v.item_id, v.owner_id, v.workspace_id, "
            "v.created_at, {distance} AS distance FROM episode_vectors v "
            "WHERE v.model = {model} ORDER BY distance LIMIT %s) v "
            "WHERE {where} ORDER BY distance, item_id LIMIT %s"
        ).format(**names)
        nearest_params = [vector, ef, *params, candidates]
    sql = SQL(
        "SELECT item_id, row_number() OVER (ORDER BY distance, item_id) AS rank "
        "FROM ({nearest}) nearest WHERE distance <= %s"
    ).format(nearest=nearest)
    return sql, [*nearest_params, 1.0 - MIN_SIMILARITY]


def fused(scope: EpisodeScope, query: str, k: int, candidates: int, meaning: Query) -> Query:
    """The best `k` episodes of both lists, with their snippets and fused scores."""
    words_sql, words_params = by_words(scope, query, candidates)
    meaning_sql, meaning_params = meaning
    sql = SQL(
        "WITH ranked AS (({words}) UNION ALL ({meaning})), "
        "scores AS (SELECT item_id, sum(1.0 / ({rrf_k} + rank)) AS score "
        "FROM ranked GROUP BY item_id) "
        "SELECT e.session_id, e.version, e.kind, "
        "regexp_replace(CASE WHEN e.tsv @@ q THEN ts_headline('simple', e.text, q, %s) "
        "ELSE left(e.text, %s) END, '\\s+', ' ', 'g') AS snippet, "
        "s.score::float8 AS score "
        "FROM scores s JOIN episodes e ON e.item_id = s.item_id, "
        "websearch_to_tsquery('simple', %s) q "
        "ORDER BY s.score DESC, e.created_at DESC, e.item_id LIMIT %s"
    ).format(words=words_sql, meaning=meaning_sql, rrf_k=Literal(RRF_K))
    params = [*words_params, *meaning_params, HEADLINE_OPTIONS, SNIPPET_CHARS, query, k]
    return sql, params
