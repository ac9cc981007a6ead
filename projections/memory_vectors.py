"""Which embedding model the vector read models search with, and switching to another.

Vectors of two models are never compared, so exactly one model is 'ready' (searched)
at a time; `reembed` brings in another as 'building' (from then on views write vectors
of both for every new or changed text), fills the vectors it lacks, builds its index,
and flips it to 'ready' while the views are held still, so no text is left without a
vector of the model that answers searches. Every vector comes through
`embedding_cache`: a rebuild or a re-embed never embeds the same text twice.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from eventsourcing.persistence import OperationalError
from eventsourcing.postgres import PostgresDatastore
from psycopg import Cursor
from psycopg.rows import DictRow
from psycopg.sql import SQL, Composable, Composed, Identifier, Literal

from application.ports import Embedder
from projections.view import TRACKING_TABLE

EmbedderFor = Callable[[str], Embedder]  # model id -> an embedder of that model
FILL_BATCH = 256  # texts embedded and written per transaction while re-embedding
RETRIES = 5  # times a fill batch is tried when it deadlocks with a view
ONE_READY = "embedding_models_one_ready"


class ReembedBusy(RuntimeError):
    """Another process is re-embedding right now."""


def vector_literal(v: Sequence[float]) -> str:
    """The text form pgvector reads (`[0.1,-0.2,...]`); it keeps float32 precision."""
    return "[" + ",".join(repr(float(x)) for x in v) + "]"


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
    """

    name: str
    source: str
    key: str
    text: str
    view: str
    extra: tuple[str, ...] = ()

    def index_name(self, model: str) -> str:
        """The name of the model's HNSW index on this table (at most 63 bytes)."""
        slug = re.sub(r"[^a-z0-9]+", "_", model.lower()).strip("_")[:20]
        digest = hashlib.sha256(model.encode()).hexdigest()[:8]
        return f"{self.name[:28]}_hnsw_{slug}_{digest}"

    def ensure_index(self, curs: Cursor[DictRow], model: str, dimension: int) -> None:
        """The model's index, made if it is missing. Looked up first: `CREATE INDEX IF NOT
        EXISTS` takes its table lock before it looks, and would queue behind (and block)
        every writer of the table while other processes run."""
        curs.execute("SELECT to_regclass(%s) IS NOT NULL AS found", (self.index_name(model),))
        row = curs.fetchone()
        if row is None or not row["found"]:
            curs.execute(self.index_statement(model, dimension, concurrently=False))

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
            (embedder.model, keys),
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
                (embedder.model, list(missing), [vector_literal(v) for v in made]),
            )
        return [known[k] for k in keys]


def model_states(datastore: PostgresDatastore) -> dict[str, str]:
    """Each known model's state."""
    with datastore.get_connection() as conn:
        rows = conn.execute("SELECT model, state FROM embedding_models").fetchall()
    return {str(r["model"]): str(r["state"]) for r in rows}


@dataclass(frozen=True)
class ReembedReport:
    """What a re-embed did: which model answers searches now, and how long it took."""

    previous: str
    model: str
    embedded: int  # vectors written by the re-embed itself (not by the views meanwhile)
    seconds: float

    @property
    def changed(self) -> bool:
        return self.previous != self.model

    def __str__(self) -> str:
        if not self.changed:
            return f"{self.model} is already the model searches use: nothing to do"
        return (
            f"re-embedded from {self.previous} to {self.model}: {self.embedded} vectors "
            f"in {self.seconds:.1f}s; {self.previous} is retired"
        )


def reembed(
    datastore: PostgresDatastore,
    models: EmbeddingModels,
    embedder: Embedder,
    tables: Sequence[VectorTable],
    progress: Callable[[int, int], None],
) -> ReembedReport:
    """Make `embedder`'s model the one searches use; searches keep answering throughout."""
    started = time.perf_counter()
    # The lock lives as long as this connection: one re-embed at a time.
    with datastore.get_connection() as guard:
        got = guard.execute("SELECT pg_try_advisory_lock(hashtext('embedding_models'))")
        if not (row := got.fetchone()) or not row["pg_try_advisory_lock"]:
            raise ReembedBusy("another re-embed is running; try again when it has finished")
        try:
            _check_all_listed(datastore, tables)
            previous = _begin(datastore, models, embedder, tables)
            if previous == embedder.model:
                return ReembedReport(previous, previous, 0, time.perf_counter() - started)
            embedded = _fill_all(datastore, models, embedder, tables, progress)
            for table in tables:
                _build_index(datastore, table, embedder)
            embedded += _flip(datastore, models, embedder, tables, previous)
            with datastore.get_connection() as conn:  # searches use the new one's now
                for table in tables:
                    name = Identifier(table.index_name(previous))
                    conn.execute(SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(name))
        finally:
            guard.execute("SELECT pg_advisory_unlock(hashtext('embedding_models'))")
    return ReembedReport(previous, embedder.model, embedded, time.perf_counter() - started)


def _check_all_listed(datastore: PostgresDatastore, tables: Sequence[VectorTable]) -> None:
    """Refuse when a vectors table is left out: its vectors of the retired model would go
    unsearched, with no vectors of the new one."""
    with datastore.get_connection() as conn:
        rows = conn.execute(
            "SELECT table_name FROM information_schema.columns WHERE column_name = 'embedding' "
            "AND udt_name = 'vector' AND table_schema = current_schema() "
            "AND table_name <> 'embedding_cache' AND NOT table_name = ANY(%s)",
            ([t.name for t in tables],),
        ).fetchall()
    if rows:
        names = ", ".join(sorted(str(r["table_name"]) for r in rows))
        raise ValueError(f"re-embed every vectors table: {names} left out")


def _begin(
    datastore: PostgresDatastore,
    models: EmbeddingModels,
    embedder: Embedder,
    tables: Sequence[VectorTable],
) -> str:
    """The ready model; unless it is `embedder`'s, that model is registered 'building'
    (and one left building by an interrupted re-embed to another model is retired)."""
    with datastore.transaction(commit=True) as curs:
        ready = models.active(curs).model
        if ready == embedder.model:
            return ready
        curs.execute(
            "UPDATE embedding_models SET state = 'retired' "
            "WHERE state = 'building' AND model <> %s RETURNING model",
            (embedder.model,),
        )
        for abandoned in [str(r["model"]) for r in curs.fetchall()]:
            for table in tables:
                curs.execute(
                    SQL("DELETE FROM {} WHERE model = %s").format(Identifier(table.name)),
                    (abandoned,),
                )
        curs.execute(
            "INSERT INTO embedding_models (model, dimension, state) VALUES (%s, %s, 'building') "
            "ON CONFLICT (model) DO UPDATE SET state = 'building', started_at = now(), "
            "ready_at = NULL, dimension = EXCLUDED.dimension",
            (embedder.model, embedder.dimension),
        )
    return ready


def _counts(curs: Cursor[DictRow], table: VectorTable, model: str) -> tuple[int, int]:
    """How many source rows the table has, and how many of them lack a vector of `model`."""
    curs.execute(
        SQL(
            "SELECT count(*) AS total, count(*) FILTER (WHERE NOT EXISTS (SELECT 1 FROM "
            "{vectors} v WHERE v.{key} = s.{key} AND v.model = %s)) AS missing FROM {source} s"
        ).format(**_names(table)),
        (model,),
    )
    row = curs.fetchone()
    return (int(row["total"]), int(row["missing"])) if row else (0, 0)


def _names(table: VectorTable, *, skip_locked: bool = False) -> dict[str, Composable]:
    return {
        "source": Identifier(table.source), "vectors": Identifier(table.name),
        "key": Identifier(table.key), "text": Identifier(table.text),
        "extra": SQL("").join(SQL(", {}").format(Identifier(c)) for c in table.extra),
        "extra_s": SQL("").join(SQL(", s.{}").format(Identifier(c)) for c in table.extra),
        "skip": SQL("SKIP LOCKED" if skip_locked else ""),
    }  # fmt: skip


def _fill_all(
    datastore: PostgresDatastore,
    models: EmbeddingModels,
    embedder: Embedder,
    tables: Sequence[VectorTable],
    progress: Callable[[int, int], None],
) -> int:
    """One pass over every table, writing the vectors the model lacks, a batch at a time."""
    with datastore.transaction() as curs:
        counts = [_counts(curs, t, embedder.model) for t in tables]
    total = sum(t for t, _ in counts)
    done = total - sum(m for _, m in counts)
    progress(done, total)
    written = 0
    for table in tables:
        after: object = None
        while True:
            for attempt in range(RETRIES):
                try:
                    with datastore.transaction(commit=True) as curs:
                        count, next_after = _fill_batch(curs, models, embedder, table, after,
                                                        skip_locked=True)  # fmt: skip
                    break
                except OperationalError:  # a deadlock with a view writing the same text
                    if attempt == RETRIES - 1:
                        raise
                    time.sleep(0.1 * (attempt + 1))
            written, after = written + count, next_after
            if after is None:
                break
            done = min(total, done + count)
            progress(done, total)
    progress(total, total)
    return written


def _fill_batch(
    curs: Cursor[DictRow],
    models: EmbeddingModels,
    embedder: Embedder,
    table: VectorTable,
    after: object,
    *,
    skip_locked: bool,
) -> tuple[int, object]:
    """Vectors for the next `FILL_BATCH` source rows after key `after` that lack one: how
    many were written, and the last key looked at (None when there are no more).

    A vector goes in only if its row still has the text that was embedded, checked under
    a share lock: a view changing that row meanwhile waits, then writes or deletes the
    model's vector itself, so no stale vector survives."""
    names = _names(table, skip_locked=skip_locked)
    curs.execute(
        SQL(
            "SELECT s.{key} AS key, s.{text} AS text FROM {source} s "
            "WHERE (%s::uuid IS NULL OR s.{key} > %s::uuid) AND NOT EXISTS "
            "(SELECT 1 FROM {vectors} v WHERE v.{key} = s.{key} AND v.model = %s) "
            "ORDER BY s.{key} LIMIT %s"
        ).format(**names),
        (after, after, embedder.model, FILL_BATCH),
    )
    rows = curs.fetchall()
    if not rows:
        return 0, None
    texts = [str(r["text"]) for r in rows]
    vectors = [vector_literal(v) for v in models.vectors(curs, embedder, texts)]
    curs.execute(
        SQL(
            "INSERT INTO {vectors} ({key}, model, embedding{extra}) "
            "SELECT s.{key}, %s, x.v::vector{extra_s} "
            "FROM unnest(%s::uuid[], %s::bytea[], %s::text[]) AS x(k, h, v) "
            "JOIN {source} s ON s.{key} = x.k "
            "WHERE sha256(convert_to(s.{text}, 'UTF8')) = x.h "
            "FOR SHARE OF s {skip} ON CONFLICT DO NOTHING"
        ).format(**names),
        (embedder.model, [r["key"] for r in rows], [text_sha256(t) for t in texts], vectors),
    )
    return max(curs.rowcount, 0), rows[-1]["key"]


def _build_index(datastore: PostgresDatastore, table: VectorTable, embedder: Embedder) -> None:
    """The model's HNSW index, built without blocking the views' writes."""
    name = table.index_name(embedder.model)
    with datastore.get_connection() as conn:
        invalid = conn.execute(
            "SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE c.relname = %s AND NOT i.indisvalid",
            (name,),
        ).fetchone()
        if invalid:  # left by an interrupted build
            conn.execute(SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(Identifier(name)))
        conn.execute("SET maintenance_work_mem = '1GB'")
        conn.execute("SET max_parallel_maintenance_workers = 1")
        try:
            conn.execute(table.index_statement(embedder.model, embedder.dimension,
                                               concurrently=True))  # fmt: skip
        finally:
            conn.execute("RESET maintenance_work_mem")
            conn.execute("RESET max_parallel_maintenance_workers")


def _flip(
    datastore: PostgresDatastore,
    models: EmbeddingModels,
    embedder: Embedder,
    tables: Sequence[VectorTable],
    previous: str,
) -> int:
    """With the views held, write any vector still missing, make the model the ready one
    and delete the retired one's vectors, in one transaction."""
    written = 0
    with datastore.transaction(commit=True) as curs:
        curs.execute(
            f"SELECT application_name FROM {TRACKING_TABLE} "  # noqa: S608
            "WHERE application_name = ANY(%s) ORDER BY application_name FOR UPDATE",
            (sorted({t.view for t in tables}),),
        )
        for table in tables:
            after: object = None
            while True:
                count, after = _fill_batch(curs, models, embedder, table, after,
                                           skip_locked=False)  # fmt: skip
                written += count
                if after is None:
                    break
            if left := _counts(curs, table, embedder.model)[1]:
                raise RuntimeError(f"{left} rows of {table.source} still lack a vector")
        curs.execute(
            "UPDATE embedding_models SET state = 'retired' WHERE state = 'ready' AND model <> %s",
            (embedder.model,),
        )
        curs.execute(
            "UPDATE embedding_models SET state = 'ready', ready_at = now() WHERE model = %s",
            (embedder.model,),
        )
        for table in tables:
            curs.execute(
                SQL("DELETE FROM {} WHERE model = %s").format(Identifier(table.name)), (previous,)
            )
    return written
