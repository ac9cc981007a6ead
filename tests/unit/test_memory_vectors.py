"""The pure parts of the embedding-model bookkeeping: vector text, index names, reports."""

from __future__ import annotations

import numpy as np
import pytest

from projections.memory_vectors import (
    VectorTable,
    parse_vector,
    text_sha256,
    vector_literal,
)
from projections.reembed import ReembedReport
from projections.vector_graphs import GraphsKept, GroupIndex

TABLE = VectorTable("memory_vectors", "memories", "memory_id", "text", "memories", ("namespace",))


def test_a_vector_survives_its_text_form_at_float32_precision() -> None:
    vector = [float(x) for x in np.random.default_rng(1).standard_normal(256).astype(np.float32)]
    vector += [1e-45, -3.4e38, 0.0]
    text = vector_literal(vector)
    assert text.startswith("[") and text.endswith("]") and " " not in text
    back = np.array(parse_vector(text), dtype=np.float32)  # as pgvector reads it
    assert back.tolist() == np.array(vector, dtype=np.float32).tolist()


def test_each_model_gets_its_own_index_name_within_postgres_limit() -> None:
    models = [
        "hashing-256", "hashing-128", "wordllama-l2_supercat-256", "wordllama-l2_supercat-1024",
        "a" * 200, "a" * 199 + "b", "Model With Spaces/and:colons",
    ]  # fmt: skip
    names = [TABLE.index_name(m) for m in models]
    assert len(set(names)) == len(names)
    assert all(len(n.encode()) <= 63 and n.startswith("memory_vectors_hnsw_") for n in names)
    long = VectorTable("x" * 60, "s", "k", "t", "v")
    assert len(long.index_name("hashing-256")) <= 63


def test_the_index_casts_to_the_models_dimension_and_keeps_to_its_rows() -> None:
    statement = TABLE.index_statement("it's-256", 256, concurrently=True).as_string(None)
    assert statement.startswith("CREATE INDEX CONCURRENTLY IF NOT EXISTS")
    assert "USING hnsw ((embedding::vector(256)) vector_cosine_ops)" in statement
    assert statement.endswith("WHERE model = 'it''s-256'")


def test_the_cache_key_is_the_sha256_of_the_utf8_text() -> None:
    assert text_sha256("café").hex() == (
        "850f7dc43910ff890f8879c0ed26fe697c93a067ad93a7d50f466a7028a9bf4e"
    )


def test_a_report_says_when_there_was_nothing_to_do() -> None:
    assert "already" in str(ReembedReport("hashing-256", "hashing-256", 0, 0.1))
    done = ReembedReport("hashing-256", "hashing-128", 42, 3.0)
    assert done.changed and str(done).startswith("re-embedded from hashing-256 to hashing-128")


GROUPED = VectorTable(
    "memory_vectors", "memories", "memory_id", "text", "memories", ("namespace",),
    graph_per="namespace", group_sizes=("memory_namespaces", "namespace", "memories"),
)  # fmt: skip


def test_each_group_and_model_gets_its_own_graph_name_within_postgres_limit() -> None:
    groups = ["user:1", "user:2", "workspace:1", "team:" + "x" * 300, "it's"]
    graphs = [GroupIndex(GROUPED, g, m) for g in groups for m in ("hashing-256", "hashing-128")]
    names = {g.name for g in graphs}
    assert len(names) == len(graphs)
    assert all(len(n.encode()) <= 63 and n.startswith("memory_vectors_graph_") for n in names)


def test_a_graph_and_its_scan_say_the_same_cast_and_predicate_with_literals() -> None:
    graph = GroupIndex(GROUPED, "user:o'brien", "it's-256")
    statement = graph.statement(256).as_string(None)
    where = "WHERE model = 'it''s-256' AND \"namespace\" = 'user:o''brien'"
    assert statement.startswith(f'CREATE INDEX CONCURRENTLY IF NOT EXISTS "{graph.name}"')
    assert "USING hnsw ((embedding::vector(256)) vector_cosine_ops)" in statement
    assert statement.endswith(where)
    scan = graph.scan("memory_id", 256).as_string(None)
    assert "(embedding::vector(256)) <=> %(vector)s::vector(256)" in scan
    assert f"{where} ORDER BY distance LIMIT %(ef)s" in scan


def test_only_a_table_grouped_by_one_of_its_columns_has_graphs_per_group() -> None:
    with pytest.raises(ValueError, match="extra columns"):
        VectorTable("v", "s", "k", "t", "view", ("namespace",), graph_per="owner")
    with pytest.raises(ValueError, match="group_sizes"):
        VectorTable("v", "s", "k", "t", "view", ("namespace",), graph_per="namespace")
    with pytest.raises(ValueError, match="no groups"):
        GroupIndex(TABLE, "user:1", "hashing-256").predicate()
    assert "nothing to do" in str(GraphsKept())
    assert str(GraphsKept(built=["user:1 (m)"], dropped=["user:2 (m)"])) == (
        "built 1: user:1 (m); dropped 1"
    )


def test_a_groups_words_index_keeps_to_its_rows_of_the_source_table() -> None:
    table = VectorTable(
        "memory_vectors", "memories", "memory_id", "text", "memories", ("namespace",),
        graph_per="namespace", words="tsv",
        group_sizes=("memory_namespaces", "namespace", "memories"),
    )  # fmt: skip
    words = GroupIndex(table, "user:o'brien", "")
    assert words.words and words.label == "user:o'brien (words)"
    assert words.name.startswith("memory_vectors_words_") and len(words.name) <= 63
    assert words.name != GroupIndex(table, "user:o'brien", "hashing-256").name
    statement = words.statement(0).as_string(None)
    assert statement == (
        f'CREATE INDEX CONCURRENTLY IF NOT EXISTS "{words.name}" ON "memories" '
        "USING gin (\"tsv\") WHERE \"namespace\" = 'user:o''brien'"
    )
