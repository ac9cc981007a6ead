"""Embedders: text to vectors for skill matching and memories.

`build_embedder` picks one by the name a setting gives; `embedder_for` rebuilds the one a
stored vector names (its `model`), so vectors made before a switch can still be read and
re-embedded.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from adapters.config.settings import DEFAULT_EMBEDDER, default_embedder
from adapters.embeddings.hashing import HashingEmbedder
from adapters.embeddings.voyage import DEFAULT_DIMENSIONS as VOYAGE_DIMENSIONS
from adapters.embeddings.voyage import DEFAULT_MODEL as DEFAULT_VOYAGE_MODEL
from adapters.embeddings.voyage import VoyageEmbedder
from adapters.embeddings.word_llama import EmbedderUnavailable, WordLlamaEmbedder
from application.ports import Embedder

EMBEDDERS = ("hashing", "wordllama", "voyage")

# The forms of `Embedder.model`, which `embedder_for` turns back into embedders.
_HASHING = re.compile(r"hashing-(\d+)")
_WORDLLAMA = re.compile(r"wordllama-l2_supercat-(\d+)")
_VOYAGE = re.compile(r"(voyage-[a-z0-9.-]+?)-(\d+)")
MODEL_FORMS = (
    "hashing-<dimension>",
    "wordllama-l2_supercat-<dimension>",
    "voyage-<model>-<dimension>",
)


def build_embedder(name: str, *, env: Mapping[str, str] | None = None) -> Embedder:
    """The embedder called `name`: "hashing" (deterministic, no model), "wordllama" (a
    local model) or "voyage" (Voyage AI: `VOYAGE_API_KEY`, `TOKENDANCE_VOYAGE_MODEL`)."""
    match name.strip().lower():
        case "hashing":
            return HashingEmbedder()
        case "wordllama":
            return WordLlamaEmbedder.load()
        case "voyage":
            environ = os.environ if env is None else env
            model = environ.get("TOKENDANCE_VOYAGE_MODEL", "").strip() or DEFAULT_VOYAGE_MODEL
            # A model (its default size), or a model and a size: "voyage-3.5-lite-512".
            sized = _VOYAGE.fullmatch(model)
            if model not in VOYAGE_DIMENSIONS and sized and sized[1] in VOYAGE_DIMENSIONS:
                return voyage_embedder(sized[1], int(sized[2]), env=environ)
            return voyage_embedder(model, None, env=environ)
        case other:
            raise ValueError(f"unknown embedder {other!r}; choose one of {', '.join(EMBEDDERS)}")


def embedder_for(model_id: str, *, env: Mapping[str, str] | None = None) -> Embedder:
    """The embedder whose `model` is `model_id`: "hashing-128", "wordllama-l2_supercat-256"
    or "voyage-3.5-1024" (a Voyage one needs `VOYAGE_API_KEY`)."""
    if found := _HASHING.fullmatch(model_id):
        return HashingEmbedder(dimension=int(found[1]))
    if found := _WORDLLAMA.fullmatch(model_id):
        return WordLlamaEmbedder.load(dimension=int(found[1]))
    if found := _VOYAGE.fullmatch(model_id):
        return voyage_embedder(found[1], int(found[2]), env=env)
    raise ValueError(
        f"no embedder is known for the model {model_id!r}; the forms are {', '.join(MODEL_FORMS)}"
    )


def voyage_embedder(
    model: str, dimension: int | None, *, env: Mapping[str, str] | None = None
) -> VoyageEmbedder:
    """A Voyage embedder with the key and base URL the environment gives."""
    environ = os.environ if env is None else env
    key = environ.get("VOYAGE_API_KEY", "").strip()
    if not key:
        raise EmbedderUnavailable(
            f"the Voyage AI embedder ({model}) needs an API key: set VOYAGE_API_KEY"
        )
    base_url = environ.get("TOKENDANCE_VOYAGE_BASE_URL", "").strip() or None
    return VoyageEmbedder(key, model=model, dimension=dimension, base_url=base_url)


def default_embedder_name(env: Mapping[str, str] | None = None) -> str:
    """The embedder to use: "voyage" when `VOYAGE_API_KEY` is set and
    `TOKENDANCE_EMBEDDER` is not, else the setting's default ("wordllama")."""
    return default_embedder(os.environ if env is None else env)


__all__ = [
    "DEFAULT_EMBEDDER",
    "EMBEDDERS",
    "EmbedderUnavailable",
    "HashingEmbedder",
    "VoyageEmbedder",
    "WordLlamaEmbedder",
    "build_embedder",
    "default_embedder_name",
    "embedder_for",
]
