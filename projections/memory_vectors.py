"""Which embedding model the vector read models search with, and switching to another.

Vectors of two models are never compared, so exactly one model is 'ready' (searched)
at a time; `reembed` brings in another as 'building' (from then on views write vectors
of both for every new or changed text), fills the vectors it lacks, builds its index,
and flips it to 'ready' while the views are held still, so no text is left without a
vector of the model that answers searches (`projections.reembed`). Every vector comes
through `embedding_cache`: a rebuild or a re-embed never embeds the same text twice.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from eventsourcing.postgres import PostgresDatastore
from psycopg import Cursor
from psycopg.rows import DictRow
from psycopg.sql import SQL, Composed, Identifier, Literal

from application.ports import Embedder
from projections.pg_arrays import array_of

EmbedderFor = Callable[[str], Embedder]  # model id -> an embedder of that model
ONE_READY = "embedding_models_one_ready"


def vector_literal(v: Sequence[float]) -> str:
    """The text form pgvector reads (`[0.1,-0.2,...]`); it keeps float32 precision.

    Rounded to float32 first, then written with 9 significant digits, which is enough
    for every float32 to read back as itself. One format string per dimension does it
    in a single call, about three times quicker than a `repr` per number.
    """
    values = np.asarray(v, dtype=np.float32).tolist()
    return _vector_format(len(values)) % tuple(values)


@functools.cache
def _vector_format(dimension: int) -> str:
    return "[" + ",".join(["%.9g"] * dimension) + "]"


def parse_vector(text: str) -> list[float]:
    """A vector from pgvector's text form."""
    return [float(x) for x in json.loads(text)]


def text_sha256(text: str) -> bytes:
    """The cache key of a text: what Postgres's `sha256(convert_to(t, 'UTF8'))` gives."""
    return hashlib.sha256(text.encode()).digest()


@dataclass(frozen=True)
class VectorTable:
    """A vectors table `<name>(<key> uuid, model text, embedding vector, [extra], PRIMARY
    KEY (<key>, model))` kept by the view `view` from `<source>`'s `<text>` column.

    `extra` columns are copied from the source row (same names), so a search can filter
    the vectors without a join (`namespace`). `view` names the tracking row a re-embed
    holds while it flips models, so none of the view's batches runs meanwhile.

    The vectors of a model are in one HNSW graph, or, when `graph_per` names an `extra`
    column, in one graph per large group of rows with the same value there
    (`projections.vector_graphs`): searches within a group then never filter a scan. A
    large group's rows of `source` then get a GIN index of their `words` column too.
    """

    name: str
    source: str
    key: str
    text: str
    view: str
    extra: tuple[str, ...] = ()
    graph_per: str | None = None
    words: str | None = None  # the source's tsvector column (with `graph_per`)
    group_sizes: tuple[str, str, str] | None = None  # (table, group column, size column)

    def __post_init__(self) -> None:
        if self.graph_per is not None and self.graph_per not in self.extra:
            raise ValueError(f"graph_per must be one of the extra columns, not {self.graph_per}")
        if self.graph_per is not None and self.group_sizes is None:
            raise ValueError("graph_per needs group_sizes: where each group's size is kept")

    def index_name(self, model: str) -> str:
        """The name of the model's HNSW index on this table (at most 63 bytes)."""
        slug = re.sub(r"[^a-z0-9]+", "_", model.lower()).strip("_")[:20]
        digest = hashlib.sha256(model.encode()).hexdigest()[:8]
        return f"{self.name[:28]}_hnsw_{slug}_{digest}"

    def ensure_index(self, curs: Cursor[DictRow], model: str, dimension: int) -> None:
        """The model's whole-table index, made if it is missing (dropped, if the table has
        graphs per group instead). Looked up first: `CREATE INDEX IF NOT EXISTS` takes its
        table lock before it looks, and would queue behind (and block) every writer of the
        table while other processes run."""
        curs.execute("SELECT to_regclass(%s) IS NOT NULL AS found", (self.index_name(model),))
        row = curs.fetchone()
        found = row is not None and row["found"]
        if self.graph_per is None and not found:
            curs.execute(self.index_statement(model, dimension, concurrently=False))
        elif self.graph_per is not None and found:  # left by a version with one graph
            curs.execute(SQL("DROP INDEX {}").format(Identifier(self.index_name(model))))

    def index_statement(self, model: str, dimension: int, *, concurrently: bool) -> Composed:
        """A partial HNSW index on the model's vectors, cast to its dimension; a search
        uses it when it says the same cast and `model = '<id>'`."""
        return SQL(
            "CREATE INDEX {how} IF NOT EXISTS {index} ON {table} USING hnsw "
            "((embedding::vector({dim})) vector_cosine_ops) WHERE model = {model}"
        ).format(
            how=SQL("CONCURRENTLY" if concurrently else ""),
            index=Identifier(self.index_name(model)),
            table=Identifier(self.name),
            dim=Literal(dimension),
            model=Literal(model),
        )


class EmbeddingModels:
    """The embedding models known to the database, and their embedders."""

    create_statements: tuple[str, ...] = (
        "CREATE EXTENSION IF NOT EXISTS vector",
        """CREATE TABLE IF NOT EXISTS embedding_models (
            model text PRIMARY KEY,
            dimension integer NOT NULL CHECK (dimension > 0),
            state text NOT NULL CHECK (state IN ('building', 'ready', 'retired')),
            started_at timestamptz NOT NULL DEFAULT now(),
            ready_at timestamptz
        )""",
        f"CREATE UNIQUE INDEX IF NOT EXISTS {ONE_READY} ON embedding_models ((true)) "
        "WHERE state = 'ready'",
        """CREATE TABLE IF NOT EXISTS embedding_cache (
            model text NOT NULL,
            text_sha256 bytea NOT NULL,
            embedding vector NOT NULL,
            PRIMARY KEY (model, text_sha256)
        )""",
    )

    def __init__(self, configured: Embedder, embedder_for: EmbedderFor) -> None:
        self.configured = configured
        self._embedder_for = embedder_for
        self._embedders: dict[str, Embedder] = {configured.model: configured}

    def embedder(self, model: str) -> Embedder:
        """An embedder of `model` (made once: a model may take a while to load)."""
        found = self._embedders.get(model)
        if found is None:
            found = self._embedders[model] = self._embedder_for(model)
            if found.model != model:
                raise ValueError(f"asked for an embedder of {model}, got one of {found.model}")
        return found

    def active(self, curs: Cursor[DictRow]) -> Embedder:
        """The ready model's embedder; `configured` becomes the ready model if none is."""
        curs.execute("SELECT model FROM embedding_models WHERE state = 'ready'")
        row = curs.fetchone()
        if row is not None:
            return self.embedder(str(row["model"]))
        curs.execute(
            "INSERT INTO embedding_models (model, dimension, state, ready_at) "
            "VALUES (%s, %s, 'ready', now()) ON CONFLICT (model) DO UPDATE "
            "SET state = 'ready', ready_at = now()",
            (self.configured.model, self.configured.dimension),
        )
        return self.configured

    def to_write(self, curs: Cursor[DictRow]) -> list[Embedder]:
        """The ready and building models: every new or changed text gets a vector of each."""
        curs.execute(
            "SELECT model FROM embedding_models WHERE state IN ('ready', 'building') ORDER BY model"
        )
        found = [self.embedder(str(r["model"])) for r in curs.fetchall()]
        return found or [self.active(curs)]

    def vectors(
        self, curs: Cursor[DictRow], embedder: Embedder, texts: Sequence[str]
    ) -> list[list[float]]:
        """A vector of `embedder`'s model per text, from the cache where it has them."""
        keys = [text_sha256(t) for t in texts]
        curs.execute(
            "SELECT text_sha256, embedding::text AS embedding FROM embedding_cache "
            "WHERE model = %s AND text_sha256 = ANY(%s)",
            (embedder.model, array_of("bytea")(keys)),
        )
        known = {bytes(r["text_sha256"]): parse_vector(r["embedding"]) for r in curs.fetchall()}
        missing = {k: t for k, t in zip(keys, texts, strict=True) if k not in known}
        if missing:
            made = embedder.embed(list(missing.values()))
            known.update(zip(missing, made, strict=True))
            curs.execute(
                "INSERT INTO embedding_cache (model, text_sha256, embedding) "
                "SELECT %s, k, v::vector FROM unnest(%s::bytea[], %s::text[]) AS x(k, v) "
                "ON CONFLICT DO NOTHING",
                (
                    embedder.model,
                    array_of("bytea")(missing),
                    array_of("text")(vector_literal(v) for v in made),
                ),
            )
        return [known[k] for k in keys]


def model_states(datastore: PostgresDatastore) -> dict[str, str]:
    """Each known model's state."""
    with datastore.get_connection() as conn:
        rows = conn.execute("SELECT model, state FROM embedding_models").fetchall()
    return {str(r["model"]): str(r["state"]) for r in rows}
