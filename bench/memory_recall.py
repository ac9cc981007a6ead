"""Recalling from long-term memory: `MemoriesView.search` (k=5) in a namespace of
100,000 memories among 1,000,000 in all, and how fast the local model embeds.

The memories read model is loaded server side, not through events: `COPY` writes the
namespaces, the memories (8-16 words each from a 5,000-word vocabulary, drawn with a
Zipf-like skew so some words are common) and one random 256-dimension unit vector per
memory (binary COPY, built with numpy). The namespace under test holds
`--namespace-size` memories, a second one just under `GRAPH_MIN` (the largest that is
searched by its rows); the rest are spread over namespaces of 1,000. The graph keeper
then gives each namespace of `GRAPH_MIN` or more its own HNSW graph and words index, as a
running server's would: its build time is printed, and how long a pass with nothing to
do takes (the server makes one a minute).

Timed: `search` as the API calls it (a query of 2-3 vocabulary words, its vector from
a seeded random "model", so the graph scan sees no shortcut), p50 and p99 over
`--queries` calls after a warm-up, in both namespaces. Target: p99 under 30 ms. Also
shown: how many of the exact 5 nearest (in the namespace) the graph scan finds, and
WordLlama's throughput in batches of 64.

    python -m bench.memory_recall [--total 1000000] [--namespace-size 100000]
        [--queries 200] [--database-url URL]

At 1,000,000 memories on 2 cores the index build takes a long while (tens of minutes).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np
import psycopg
from eventsourcing.postgres import PostgresDatastore
from psycopg.sql import SQL

from adapters.postgres.eventstore import datastore_of
from adapters.processes.embedded import EmbeddedPostgres, stop_postgres
from bench.api_harness import machine
from bench.harness import fresh_servers, median, percentile
from projections.memories import MemoriesView
from projections.memory_vectors import EmbeddingModels, vector_literal
from projections.vector_graphs import GRAPH_MIN, GraphKeeper, GroupIndex

DIM, VOCABULARY, OTHER_NAMESPACE = 256, 5000, 1000
MODEL = "bench-random-256"
TARGET_P99_MS = 30.0
rng = np.random.default_rng(7)
WORDS = np.array([f"w{i}{'abcdefghij'[i % 10]}" for i in range(VOCABULARY)])
WEIGHTS = 1 / (np.arange(VOCABULARY) + 10.0)
WEIGHTS /= WEIGHTS.sum()


class RandomEmbedder:
    """A stand-in model: a unit vector seeded by the text (the same text, the same one)."""

    model = MODEL
    dimension = DIM
    planted: ClassVar[dict[str, list[float]]] = {}  # texts whose vector the bench chose

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [
            self.planted.get(t) or _unit(int.from_bytes(hashlib.sha256(t.encode()).digest()[:8]))
            for t in texts
        ]

    def embed_query(self, text: str) -> list[float]:
        [vector] = self.embed([text])
        return vector


def _unit(seed: int) -> list[float]:
    v = np.random.default_rng(seed).standard_normal(DIM)
    return [float(x) for x in v / np.linalg.norm(v)]


def ids(kind: int, start: int, n: int) -> list[uuid.UUID]:
    return [uuid.UUID(int=(kind << 64) | i) for i in range(start, start + n)]


def namespaces(total: int, size: int) -> list[tuple[str, int]]:
    """(namespace, memories): the one under test first, then the largest scanned exactly."""
    exact = GRAPH_MIN - 1
    sizes = [size, exact] + [OTHER_NAMESPACE] * ((total - size - exact) // OTHER_NAMESPACE)
    if rest := total - sum(sizes):
        sizes.append(rest)
    return [(f"workspace:{u}", n) for u, n in zip(ids(1, 0, len(sizes)), sizes, strict=True)]


def vector_rows(memory_ids: np.ndarray, namespace: str) -> bytes:
    """Binary COPY rows of `memory_vectors` (memory_id, model, embedding, namespace,
    category 'knowledge', expires_at NULL)."""
    n = len(memory_ids)
    row = np.dtype([
        ("fields", ">i2"), ("l1", ">i4"), ("id", "S16"), ("l2", ">i4"), ("model", f"S{len(MODEL)}"),
        ("l3", ">i4"), ("dim", ">i2"), ("unused", ">i2"), ("vec", ">f4", (DIM,)),
        ("l4", ">i4"), ("ns", f"S{len(namespace)}"), ("l5", ">i4"), ("category", "S9"),
        ("l6", ">i4"),
    ])  # fmt: skip
    rows = np.zeros(n, dtype=row)
    rows["fields"], rows["l1"], rows["l2"], rows["l3"] = 6, 16, len(MODEL), 4 + 4 * DIM
    rows["l5"], rows["category"], rows["l6"] = 9, "knowledge", -1
    rows["id"] = memory_ids
    rows["model"], rows["dim"], rows["l4"], rows["ns"] = MODEL, DIM, len(namespace), namespace
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    rows["vec"] = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    return rows.tobytes()


COPY_MEMORIES = (
    "COPY memories (memory_id, namespace, kind, scope_id, organization_id, text, category, "
    "expires_at, created_at, created_by_kind, created_by, updated_at, updated_by_kind, "
    "updated_by, revision) FROM STDIN"
)


def load(store: PostgresDatastore, total: int, size: int) -> None:
    """The namespaces, memories and vectors, by COPY; then ANALYZE."""
    org, author, now = uuid.UUID(int=3), uuid.UUID(int=4), "2026-01-01T00:00:00Z"
    header, trailer = b"PGCOPY\n\xff\r\n\x00" + bytes(8), b"\xff\xff"
    with store.get_connection() as conn, conn.cursor() as curs:
        next_id = 0
        for namespace, n in namespaces(total, size):
            scope = namespace.partition(":")[2]
            curs.execute(
                "INSERT INTO memory_namespaces VALUES (%s, %s, 'workspace', %s, %s, %s)",
                (uuid.uuid4(), namespace, scope, org, n),
            )
            memory_ids = ids(2, next_id, n)
            next_id += n
            counts = rng.integers(8, 17, n)
            drawn = rng.choice(WORDS, size=int(counts.sum()), p=WEIGHTS)
            ends = np.cumsum(counts)
            with curs.copy(COPY_MEMORIES) as copy:
                for i, memory_id in enumerate(memory_ids):
                    text = " ".join(drawn[ends[i] - counts[i] : ends[i]])
                    copy.write_row((memory_id, namespace, "workspace", scope, org, text,
                                    "knowledge", None, now, "user", author, now, "user", author,
                                    1))  # fmt: skip
            raw = np.array([u.bytes for u in memory_ids], dtype="S16")
            with curs.copy("COPY memory_vectors FROM STDIN (FORMAT BINARY)") as copy:
                copy.write(header + vector_rows(raw, namespace) + trailer)
        curs.execute("ANALYZE memory_namespaces, memories, memory_vectors")


def build_graphs(store: PostgresDatastore) -> str:
    """The keeper's pass over the loaded vectors: what it built, and in how long."""
    keeper = GraphKeeper(store, [MemoriesView.VECTORS])
    started = time.perf_counter()
    kept = keeper.keep()
    took = time.perf_counter() - started
    with store.get_connection() as conn:
        conn.execute("ANALYZE memory_vectors")
    started = time.perf_counter()
    again = keeper.keep()
    idle = time.perf_counter() - started
    return f"{kept} in {took:.1f} s; the next pass ({again}) took {idle * 1000:.0f} ms"


def graph_recall(store: PostgresDatastore, view: MemoriesView, namespace: str, n: int) -> str:
    """How well the search's vector side does: for random queries, the share of the exact
    5 nearest (in the namespace) it returns; for queries made near a stored vector
    (cosine about 0.9, as a paraphrase is), how often that memory comes first."""
    found = first = 0
    with store.get_connection() as conn:
        stored = conn.execute(
            "SELECT memory_id, embedding::text AS v FROM memory_vectors WHERE namespace = %s "
            "ORDER BY md5(memory_id::text) LIMIT %s",
            (namespace, n),
        ).fetchall()
    for i, row in enumerate(stored):
        query = f"unknownword{i}"  # no full-text match: the 5 hits are the vector side's
        near = {h.memory_id for h in view.search(query, [namespace], k=5)}
        vector = vector_literal(RandomEmbedder().embed([query])[0])
        with store.get_connection() as conn:
            exact = conn.execute(
                f"SELECT memory_id FROM memory_vectors WHERE namespace = %s "  # noqa: S608
                f"ORDER BY embedding <=> %s::vector({DIM}) LIMIT 5",
                (namespace, vector),
            ).fetchall()
        found += len({r["memory_id"] for r in exact} & near)
        noisy = np.array(json.loads(row["v"])) + rng.standard_normal(DIM) * 0.03
        RandomEmbedder.planted[f"planted{i}"] = [float(x) for x in noisy / np.linalg.norm(noisy)]
        hits = view.search(f"planted{i}", [namespace], k=5)
        first += bool(hits) and hits[0].memory_id == row["memory_id"]
    return (
        f"random queries: {found / (5 * len(stored)):.0%} of the exact 5 nearest; "
        f"queries near a stored vector: {first}/{len(stored)} found it first"
    )


def graph_alone(store: PostgresDatastore, namespace: str, efs: Sequence[int], n: int = 50) -> str:
    """The namespace's graph scan by itself, at several ef_search."""
    graph = GroupIndex(MemoriesView.VECTORS, namespace, MODEL).scan("memory_id", DIM)
    figures = []
    for ef in efs:
        took = []
        for query in queries(n):
            vector = vector_literal(RandomEmbedder().embed([query])[0])
            with store.get_connection() as conn, conn.transaction():
                conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", (str(ef),))
                started = time.perf_counter()
                conn.execute(graph, {"vector": vector, "ef": ef}).fetchall()
                took.append((time.perf_counter() - started) * 1000)
        figures.append(f"ef {ef}: p50 {median(took):.1f} ms, p99 {percentile(took, 99):.1f} ms")
    return "; ".join(figures)


def uses_graph(store: PostgresDatastore, namespace: str) -> bool:
    graph = GroupIndex(MemoriesView.VECTORS, namespace, MODEL)
    vector = vector_literal(RandomEmbedder().embed(["plan"])[0])
    with store.get_connection() as conn:
        plan = conn.execute(
            SQL("EXPLAIN ") + graph.scan("memory_id", DIM), {"vector": vector, "ef": 40}
        )
        text = "\n".join(str(r["QUERY PLAN"]) for r in plan.fetchall())
    return graph.name in text


def queries(n: int) -> list[str]:
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(2, 4)), p=WEIGHTS)) for _ in range(n)]


def timed_search(view: MemoriesView, namespace: str, n: int, warmup: int) -> list[float]:
    for query in queries(warmup):
        view.search(query, [namespace], k=5)
    took = []
    for query in queries(n):
        started = time.perf_counter()
        view.search(query, [namespace], k=5)
        took.append((time.perf_counter() - started) * 1000)
    return took


def embedding_throughput(batches: int = 50) -> str:
    from adapters.embeddings import EmbedderUnavailable, WordLlamaEmbedder

    try:
        model = WordLlamaEmbedder.load()
    except EmbedderUnavailable as e:
        return f"WordLlama unavailable: {e}"
    texts = queries(64 * batches)
    model.embed(texts[:64])
    started = time.perf_counter()
    for i in range(batches):
        model.embed(texts[i * 64 : (i + 1) * 64])
    rate = 64 * batches / (time.perf_counter() - started)
    return f"{model.model}: {rate:,.0f} texts/s (batches of 64, {64 * batches} texts)"


def run(database_url: str, args: argparse.Namespace) -> None:
    store = datastore_of(database_url)
    try:
        view = MemoriesView(store, EmbeddingModels(RandomEmbedder(), lambda m: RandomEmbedder()))
        view.create_table()
        started = time.perf_counter()
        load(store, args.total, args.namespace_size)
        print(f"  loaded {args.total:,} memories in {time.perf_counter() - started:.1f} s")
        print(f"  graph keeper: {build_graphs(store)} (m=16, ef_construction=64)")
        with store.get_connection() as conn:
            sizes = conn.execute(
                "SELECT current_setting('shared_buffers') AS cache, pg_size_pretty("
                "pg_indexes_size('memory_vectors') + pg_relation_size('memory_vectors')) AS size"
            ).fetchone()
        print(f"  vectors and their indexes: {sizes and sizes['size']}; "
              f"shared_buffers {sizes and sizes['cache']}")  # fmt: skip
        (namespace, size), (exact, exact_size) = namespaces(args.total, args.namespace_size)[:2]
        print(f"  search walks the namespace's own graph: {uses_graph(store, namespace)}")
        for name, n, how in ((namespace, size, "own graph"), (exact, exact_size, "exact scan")):
            took = timed_search(view, name, args.queries, args.warmup)
            print(
                f"  search k=5 in {n:,} of {args.total:,} ({how}): "
                f"p50 {median(took):.2f} ms, p99 {percentile(took, 99):.2f} ms, "
                f"max {max(took):.2f} ms ({args.queries} calls; target p99 < {TARGET_P99_MS} ms)"
            )
        print(f"  graph scan alone: {graph_alone(store, namespace, [40, 80, 160])}")
        print(f"  vector side, 20 queries each: {graph_recall(store, view, namespace, 20)}")
    finally:
        store.close()
    print(f"  embedding: {embedding_throughput()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--total", type=int, default=1_000_000)
    parser.add_argument("--namespace-size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--database-url", help="a server to make a throwaway database on")
    parser.add_argument(
        "--shared-buffers", default="4GB", help="for the embedded server ('' keeps its own)"
    )
    args = parser.parse_args()
    print(f"memory recall; {machine()}")
    if args.database_url:
        os.environ["TOKENDANCE_DATABASE_URL"] = args.database_url
    with fresh_servers("memrecall") as fresh:
        if not args.database_url and args.shared_buffers:
            tune(fresh.root / "postgres", fresh.database_url, args.shared_buffers)
        run(fresh.database_url, args)


def tune(pgdata: Path, database_url: str, shared_buffers: str) -> None:
    """Restart the embedded server with the cache a server holding these tables would get
    (pgserver's default shared_buffers is 128MB: the graph would be read from the OS)."""
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"ALTER SYSTEM SET shared_buffers = '{shared_buffers}'")
    stop_postgres(pgdata)
    EmbeddedPostgres(pgdata).start(own=False)


if __name__ == "__main__":
    main()
