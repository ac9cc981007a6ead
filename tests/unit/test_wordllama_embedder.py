"""The local embedding model: loads from its own package with the network cut off."""

from __future__ import annotations

import math
import socket
from collections.abc import Iterator

import pytest

from adapters.embeddings import WordLlamaEmbedder, build_embedder
from application.skills import SkillMatcher, SkillRegistry, builtin_skills_dir


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


@pytest.fixture(scope="module")
def embedder() -> Iterator[WordLlamaEmbedder]:
    """The bundled model, loaded while any attempt to open a connection fails."""

    def refuse(*args: object, **kwargs: object) -> object:
        raise OSError("network is off in this test")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(socket, "create_connection", refuse)
        patch.setattr(socket, "getaddrinfo", refuse)
        patch.setattr(socket.socket, "connect", refuse)
        loaded = build_embedder("wordllama")
        assert isinstance(loaded, WordLlamaEmbedder)
        loaded.embed(["warm up with the network still off"])
    yield loaded


def test_the_local_model_embeds_offline_into_unit_vectors(embedder: WordLlamaEmbedder) -> None:
    vectors = embedder.embed(["research the AI agent market", "帮我调研AI Agent市场"])

    assert len(vectors) == 2
    assert all(len(v) == embedder.dimension == 256 for v in vectors)
    assert all(math.isclose(cosine(v, v), 1.0, rel_tol=1e-5) for v in vectors)
    assert embedder.embed([]) == []


def test_similar_texts_score_higher_than_unrelated_ones(embedder: WordLlamaEmbedder) -> None:
    query, similar, unrelated = embedder.embed(
        [
            "analyse the market for AI agents",
            "a report on the AI agent market size and key players",
            "my cat likes to sleep on the sofa",
        ]
    )

    assert cosine(query, similar) > cosine(query, unrelated) + 0.2


def test_an_unlisted_research_request_reaches_deep_research_by_embedding(
    embedder: WordLlamaEmbedder,
) -> None:
    # Below the default threshold (set for precision among many skills): this request
    # scores about 0.22 against deep-research, a poem about 0.06.
    registry = SkillRegistry.discover(builtin_skills_dir())
    matcher = SkillMatcher(registry, embedder, threshold=0.15)

    match = matcher.match("find out who leads electric vehicle sales and why, with sources")

    assert match is not None
    assert (match.skill.name, match.by) == ("deep-research", "embedding")
    assert matcher.match("write me a poem about cats") is None
