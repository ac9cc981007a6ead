"""An `Embedder` on WordLlama: a small static model whose weights ship in its wheel.

WordLlama averages token embeddings taken from a large model's vocabulary: no network,
no GPU, well under a millisecond a message. Its default model (`l2_supercat`, 256
dimensions) and tokenizer are files inside the `wordllama` package; `load` reads them
from there with downloads disabled, so nothing is fetched at run time.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

DEFAULT_DIMENSION = 256
# Characters of a text that are embedded: the model averages token vectors, so a text's
# start says what it is about, and a 1 MiB message would cost seconds of CPU.
MAX_CHARS = 8192


class _WordLlamaModel(Protocol):
    """The part of `wordllama.WordLlamaInference` used here."""

    def embed(self, texts: list[str], norm: bool = ...) -> NDArray[np.float32]: ...


class EmbedderUnavailable(Exception):
    """The local embedding model could not be loaded (package or its files missing)."""


class WordLlamaEmbedder:
    """Embeds with a loaded WordLlama model; unit vectors, one per text."""

    def __init__(self, model: _WordLlamaModel, *, dimension: int = DEFAULT_DIMENSION) -> None:
        self._model = model
        self._dimension = dimension

    @classmethod
    def load(cls, *, dimension: int = DEFAULT_DIMENSION) -> WordLlamaEmbedder:
        """The bundled default model, read from the installed package only (offline)."""
        try:
            import wordllama
        except ImportError as e:
            raise EmbedderUnavailable(f"the wordllama package is not installed: {e}") from None
        # `load` looks for the bundled tokenizer under the wrong folder name and would
        # then download it; its cache lookup, pointed at the package, finds both files.
        package = Path(wordllama.__file__).parent
        try:
            model = wordllama.WordLlama.load(
                cache_dir=package, dim=dimension, disable_download=True
            )
        except (FileNotFoundError, ValueError) as e:
            raise EmbedderUnavailable(f"wordllama's bundled model did not load: {e}") from None
        return cls(model, dimension=dimension)

    @property
    def model(self) -> str:
        return f"wordllama-l2_supercat-{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        vectors = self._model.embed([t[:MAX_CHARS] for t in texts], norm=True)
        return [[float(x) for x in row] for row in vectors]

    def embed_query(self, text: str) -> list[float]:
        """As a document: the model is symmetric."""
        [vector] = self.embed([text])
        return vector
