"""Embedders: text to vectors for skill matching. `build_embedder` picks one by name."""

from __future__ import annotations

from adapters.embeddings.hashing import HashingEmbedder
from adapters.embeddings.word_llama import EmbedderUnavailable, WordLlamaEmbedder
from application.ports import Embedder

EMBEDDERS = ("hashing", "wordllama")


def build_embedder(name: str) -> Embedder:
    """The embedder called `name`: "hashing" (deterministic, no model) or "wordllama"."""
    match name.strip().lower():
        case "hashing":
            return HashingEmbedder()
        case "wordllama":
            return WordLlamaEmbedder.load()
        case other:
            raise ValueError(f"unknown embedder {other!r}; choose one of {', '.join(EMBEDDERS)}")


__all__ = [
    "EMBEDDERS",
    "EmbedderUnavailable",
    "HashingEmbedder",
    "WordLlamaEmbedder",
    "build_embedder",
]
