"""A deterministic `Embedder` with no model: hashed character n-grams (tests, demos)."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterator, Sequence

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_RUNS = re.compile(f"[{_CJK}]+|[^\\W{_CJK}]+")
_HAS_CJK = re.compile(f"[{_CJK}]")


class HashingEmbedder:
    """Bag of hashed features, L2-normalized: same text, same vector, on every machine.

    Latin words give the word and its character trigrams; CJK runs (no spaces between
    words) give each character and each pair. Features are hashed with BLAKE2b (not
    Python's salted `hash`) into `dimension` buckets with a sign, so texts sharing
    words or word pieces come out close and unrelated ones near zero.
    """

    def __init__(self, *, dimension: int = 256) -> None:
        if dimension <= 0:
            raise ValueError("dimension must be positive")
        self._dimension = dimension

    @property
    def model(self) -> str:
        return f"hashing-{self._dimension}"

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._one(text) for text in texts]

    def embed_query(self, text: str) -> list[float]:
        """As a document: hashed features know no difference."""
        return self._one(text)

    def _one(self, text: str) -> list[float]:
        vector = [0.0] * self._dimension
        for feature in _features(text.casefold()):
            digest = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest())
            vector[digest % self._dimension] += 1.0 if digest >> 63 else -1.0
        norm = math.sqrt(sum(x * x for x in vector))
        return [x / norm for x in vector] if norm else vector


def _features(text: str) -> Iterator[str]:
    for run in _RUNS.findall(text):
        if _HAS_CJK.match(run):
            yield from run
            yield from (run[i : i + 2] for i in range(len(run) - 1))
        else:
            yield f"w:{run}"
            padded = f" {run} "
            yield from (padded[i : i + 3] for i in range(len(padded) - 2))
