"""Indexes of their own for the large groups of a vectors table (a namespace's memories):
an HNSW graph per model, and a full-text index of the group's rows of the source table.

pgvector 0.6 filters an HNSW scan only after the scan: among 1,000,000 vectors, a search
within a namespace of 100,000 would walk ten times the graph to keep its k, and still
miss most of the true nearest. So each group (a value of the table's `graph_per` column)
that holds `GRAPH_MIN` vectors of a model gets a partial index of its own, `WHERE model =
'<m>' AND <column> = '<value>'`, which a search naming both literally walks unfiltered.
Likewise its words: a shared GIN index makes a common word's posting list span every
group. A smaller group is compared row by row, which is fast at that size. A group's
indexes go again when it shrinks below half of `GRAPH_MIN`, or their model is retired.

`vector_graphs` lists the indexes asked for; the catalog says which are built and valid,
so a build cut short (an invalid index) is found, dropped and made again. A `GraphKeeper`
pass does that upkeep; it takes the re-embed's lock, so the two never work at once.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import psycopg
from eventsourcing.persistence import PersistenceError
from eventsourcing.postgres import PostgresDatastore
from psycopg import Connection, Cursor
from psycopg.rows import DictRow
from psycopg.sql import SQL, Composed, Identifier, Literal

from projections.memory_vectors import VectorTable

log = logging.getLogger(__name__)

GRAPH_MIN = 5_000  # vectors of one model in one group before the group gets a graph
WORDS = ""  # the `model` of a group's full-text index (`vector_graphs.model`)
LOCK = "hashtext('embedding_models')"  # the re-embed's lock: one of the two at a time
CREATE_STATEMENTS = (
    """CREATE TABLE IF NOT EXISTS vector_graphs (
        index_name text PRIMARY KEY,
        table_name text NOT NULL,
        grp text NOT NULL,
        model text NOT NULL,
        UNIQUE (table_name, grp, model)
    )""",
)


@dataclass(frozen=True)
class GroupIndex:
    """One group's own index: the HNSW graph of one model's vectors, or, for the model
    `WORDS`, the full-text index of its rows of the source table."""

    table: VectorTable
    group: str
    model: str

    @property
    def words(self) -> bool:
        return self.model == WORDS

    @property
    def label(self) -> str:
        """What a report calls it: "<group> (<model>)", or "<group> (words)"."""
        return f"{self.group} ({self.model or 'words'})"

    @property
    def name(self) -> str:
        digest = hashlib.sha256(f"{self.table.name}\0{self.model}\0{self.group}".encode())
        kind = "words" if self.words else "graph"
        return f"{self.table.name[:36]}_{kind}_{digest.hexdigest()[:16]}"

    def statement(self, dimension: int) -> Composed:
        if self.words:
            return SQL(
                "CREATE INDEX CONCURRENTLY IF NOT EXISTS {index} ON {source} USING gin ({words}) "
                "WHERE {column} = {group}"
            ).format(
                index=Identifier(self.name),
                source=Identifier(self.table.source),
                words=Identifier(str(self.table.words)),
                column=Identifier(self._column()),
                group=Literal(self.group),
            )
        return SQL(
            "CREATE INDEX CONCURRENTLY IF NOT EXISTS {index} ON {table} USING hnsw "
            "((embedding::vector({dim})) vector_cosine_ops) WHERE {where}"
        ).format(
            index=Identifier(self.name),
            table=Identifier(self.table.name),
            dim=Literal(dimension),
            where=self.predicate(),
        )

    def scan(self, key: str, dimension: int) -> Composed:
        """The nearest `%(ef)s` of the group to `%(vector)s`, through the graph: the query
        says the index's cast and predicate with literals, so the planner can use it."""
        return SQL(
            "(SELECT {key}, (embedding::vector({dim})) <=> %(vector)s::vector({dim}) "
            "AS distance FROM {table} WHERE {where} ORDER BY distance LIMIT %(ef)s)"
        ).format(
            key=Identifier(key),
            dim=Literal(dimension),
            table=Identifier(self.table.name),
            where=self.predicate(),
        )

    def predicate(self) -> Composed:
        """The graph's rows: `model = '<m>' AND <column> = '<group>'`."""
        return SQL("model = {model} AND {column} = {group}").format(
            model=Literal(self.model), column=Identifier(self._column()), group=Literal(self.group)
        )

    def _column(self) -> str:
        if self.table.graph_per is None:
            raise ValueError(f"{self.table.name} has no groups with indexes of their own")
        return self.table.graph_per


def ready_indexes(
    curs: Cursor[DictRow], table: VectorTable, models: Sequence[str], groups: Sequence[str]
) -> set[tuple[str, str]]:
    """(group, model) of `groups`' indexes of `models` (or `WORDS`) built and valid."""
    curs.execute(
        "SELECT g.grp, g.model FROM vector_graphs g JOIN pg_class c ON c.relname = g.index_name "
        "AND c.relnamespace = current_schema()::regnamespace "
        "JOIN pg_index i ON i.indexrelid = c.oid "
        "WHERE g.table_name = %s AND g.model = ANY(%s) AND g.grp = ANY(%s) AND i.indisvalid",
        (table.name, list(models), list(groups)),
    )
    return {(str(r["grp"]), str(r["model"])) for r in curs.fetchall()}


def ready_groups(
    curs: Cursor[DictRow], table: VectorTable, model: str, groups: Sequence[str]
) -> set[str]:
    """Those of `groups` whose index of `model` (or `WORDS`) is built and valid."""
    return {group for group, _ in ready_indexes(curs, table, [model], groups)}


@dataclass
class GraphsKept:
    """What a keeper's pass did."""

    built: list[str] = field(default_factory=list)  # labels: "<group> (<model>)"
    dropped: list[str] = field(default_factory=list)
    busy: bool = False  # a re-embed (or another keeper) held the lock: nothing was done

    def __str__(self) -> str:
        if self.busy:
            return "a re-embed or another keeper is at work: nothing done"
        if not self.built and not self.dropped:
            return "every large group has its indexes: nothing to do"
        parts = [f"built {len(self.built)}: {', '.join(self.built)}"] if self.built else []
        parts += [f"dropped {len(self.dropped)}"] if self.dropped else []
        return "; ".join(parts)


class GraphKeeper:
    """Builds the graphs large groups lack and drops those no longer wanted."""

    def __init__(
        self,
        datastore: PostgresDatastore,
        tables: Sequence[VectorTable],
        *,
        minimum: int | None = None,  # GRAPH_MIN
    ) -> None:
        if any(t.graph_per is None for t in tables):
            raise ValueError("only tables with a `graph_per` column have graphs per group")
        self.datastore = datastore
        self.tables = tables
        self.minimum = GRAPH_MIN if minimum is None else minimum
        self._working: Connection[DictRow] | None = None
        self._cancelled = False

    def create_table(self) -> None:
        with self.datastore.transaction(commit=True) as curs:
            for statement in CREATE_STATEMENTS:
                curs.execute(statement)

    def keep(self, *, locked: bool = False) -> GraphsKept:
        """One pass over the tables. `locked`: the caller (a re-embed) holds the lock."""
        kept = GraphsKept()
        with self.datastore.get_connection() as conn:
            if not locked:
                got = conn.execute(f"SELECT pg_try_advisory_lock({LOCK}) AS got").fetchone()
                if not got or not got["got"]:
                    return GraphsKept(busy=True)
            self._working = conn
            try:
                for table in self.tables:
                    self._keep(conn, table, kept)
            finally:
                self._working = None
                if not locked:
                    conn.execute(f"SELECT pg_advisory_unlock({LOCK})")
        return kept

    def cancel(self) -> None:
        """Cut short the statement a pass is running (a build takes minutes), and start no
        other; the next keeper finds the invalid index it leaves and makes it again."""
        self._cancelled = True
        if (conn := self._working) is not None:
            conn.cancel_safe(timeout=5.0)

    def _keep(self, conn: Connection[DictRow], table: VectorTable, kept: GraphsKept) -> None:
        listed = conn.execute(
            "SELECT g.index_name, g.grp, g.model, coalesce(i.indisvalid, false) AS valid "
            "FROM vector_graphs g LEFT JOIN pg_class c ON c.relname = g.index_name "
            "AND c.relnamespace = current_schema()::regnamespace "
            "LEFT JOIN pg_index i ON i.indexrelid = c.oid WHERE g.table_name = %s",
            (table.name,),
        ).fetchall()
        wanted, dimensions = self._wanted(
            conn, table, {(str(r["grp"]), str(r["model"])) for r in listed}
        )
        valid = set()
        for row in listed:
            graph = GroupIndex(table, str(row["grp"]), str(row["model"]))
            if graph in wanted and row["valid"]:
                valid.add(graph)
            else:  # not wanted, or a build cut short: an invalid index still costs writes
                _drop(conn, graph)
                kept.dropped.append(graph.label)
        for graph in sorted(wanted - valid, key=lambda g: (g.model, g.group)):
            if self._cancelled:
                return
            conn.execute(
                "INSERT INTO vector_graphs (index_name, table_name, grp, model) "
                "VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING",
                (graph.name, table.name, graph.group, graph.model),
            )
            build_concurrently(conn, graph.statement(dimensions.get(graph.model, 0)))
            kept.built.append(graph.label)
            log.info("built the index %s", graph.label)

    def _wanted(
        self, conn: Connection[DictRow], table: VectorTable, listed: set[tuple[str, str]]
    ) -> tuple[set[GroupIndex], dict[str, int]]:
        """The indexes wanted now (a group at `minimum`, or one at half that whose index is
        `listed` already: no build and drop as a group hovers), and the models' dimensions.
        Group sizes come from the table the view keeps them in (no count of every vector
        each pass)."""
        models = conn.execute(
            "SELECT model, dimension FROM embedding_models WHERE state IN ('ready', 'building')"
        ).fetchall()
        dimensions = {str(r["model"]): int(r["dimension"]) for r in models}
        sizes_table, group, size = table.group_sizes or ("", "", "")
        sizes = conn.execute(
            SQL("SELECT {group} AS grp, {size} AS n FROM {sizes} WHERE {size} >= %s").format(
                group=Identifier(group), size=Identifier(size), sizes=Identifier(sizes_table)
            ),
            (max(self.minimum // 2, 1),),
        ).fetchall()
        wanted = {
            GroupIndex(table, str(r["grp"]), model)
            for r in sizes
            for model in dimensions
            if r["n"] >= self.minimum or (str(r["grp"]), model) in listed
        }
        if table.words is not None:  # with any graph, the group's words
            wanted |= {GroupIndex(table, g.group, WORDS) for g in wanted}
        return wanted, dimensions


def build_concurrently(conn: Connection[DictRow], statement: Composed) -> None:
    """Run a `CREATE INDEX CONCURRENTLY` with the memory an HNSW build needs and one
    parallel worker (2 cores: the other serves), leaving the session as it was."""
    conn.execute("SET maintenance_work_mem = '1GB'")
    conn.execute("SET max_parallel_maintenance_workers = 1")
    try:
        conn.execute(statement)
    finally:
        conn.execute("RESET maintenance_work_mem")
        conn.execute("RESET max_parallel_maintenance_workers")


def _drop(conn: Connection[DictRow], index: GroupIndex) -> None:
    conn.execute(SQL("DROP INDEX CONCURRENTLY IF EXISTS {}").format(Identifier(index.name)))
    conn.execute("DELETE FROM vector_graphs WHERE index_name = %s", (index.name,))


def keep_quietly(keeper: GraphKeeper) -> GraphsKept | None:
    """A pass for a background loop: a database that cannot be reached now is logged."""
    try:
        return keeper.keep()
    except (psycopg.Error, PersistenceError) as e:
        log.warning("cannot keep the vector graphs now (%s); trying again later", e)
        return None
