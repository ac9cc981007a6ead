"""The pure parts of the embedding-model bookkeeping: vector text, index names, reports."""

from __future__ import annotations

import numpy as np

from projections.memory_vectors import (
    ReembedReport,
    VectorTable,
    parse_vector,
    text_sha256,
    vector_literal,
)

TABLE = VectorTable("memory_vectors", "memories", "memory_id", "text", "memories", ("namespace",))


def test_a_vector_survives_its_text_form_at_float32_precision() -> None:
    vector = [float(x) for x in np.random.default_rng(1).standard_normal(256).astype(np.float32)]
    vector += [1e-45, -3.4e38, 0.0]
    text = vector_literal(vector)
    assert text.startswith("[") and text.endswith("]") and " " not in text
    assert parse_vector(text) == vector


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
