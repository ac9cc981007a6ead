"""Switching the vector read models to another embedding model while they serve.

`reembed` registers the new model as 'building' (from then on the views write vectors
of both for every new or changed text), fills the vectors it lacks a batch at a time,
builds its indexes, and flips it to 'ready' while the views are held still, so no text
is left without a vector of the model that answers searches; then the old model's
vectors and indexes go.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from eventsourcing.persistence import OperationalError
from eventsourcing.postgres import PostgresDatastore
from psycopg import Cursor
from psycopg.rows import DictRow
from psycopg.sql import SQL, Composable, Identifier

from application.ports import Embedder
from projections.memory_vectors import EmbeddingModels, VectorTable, text_sha256, vector_literal
from projections.vector_graphs import LOCK, GraphKeeper, build_concurrently
from projections.view import TRACKING_TABLE

FILL_BATCH = 256  # texts embedded and written per transaction while re-embedding
RETRIES = 5  # times a fill batch is tried when it deadlocks with a view


class ReembedBusy(RuntimeError):
    """Another process is re-embedding right now."""


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
        got = guard.execute(f"SELECT pg_try_advisory_lock({LOCK}) AS got")
        if not (row := got.fetchone()) or not row["got"]:
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
            _drop_indexes(datastore, tables, previous)  # searches use the new one's now
        finally:
            guard.execute(f"SELECT pg_advisory_unlock({LOCK})")
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
    """The model's HNSW index (or its graphs per group), built without blocking the views'
    writes. The caller holds the lock graph keepers take."""
    if table.graph_per is not None:
        GraphKeeper(datastore, [table]).keep(locked=True)
        return
    name = table.index_name(embedder.model)
    with datastore.get_connection() as conn:
        invalid = conn.execute(
            "SELECT 1 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
            "WHERE c.relname = %s AND NOT i.indisvalid",
            (name,),
        ).fetchone()
        if invalid:  # left by an interrupted build
            conn.execute(SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(Identifier(name)))
        statement = table.index_statement(embedder.model, embedder.dimension, concurrently=True)
        build_concurrently(conn, statement)


def _drop_indexes(datastore: PostgresDatastore, tables: Sequence[VectorTable], old: str) -> None:
    """The retired model's index or graphs (the caller holds the graph keepers' lock)."""
    with datastore.get_connection() as conn:
        for table in tables:
            name = Identifier(table.index_name(old))
            conn.execute(SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(name))
    if graphs := [t for t in tables if t.graph_per is not None]:
        GraphKeeper(datastore, graphs).keep(locked=True)


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
