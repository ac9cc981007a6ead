"""How much of each model request is a byte-identical prefix of the next one.

A 100-step scripted research session (plan updates, searches with 500-2000 character
results, findings, progress notes, thinking with signatures) runs on the in-memory
store; every request the model receives is serialized as the Anthropic wire body
(`to_wire`, then `json.dumps` without sorting keys, in the order the API renders a
prompt for caching: tools, system, messages; system and tools never change, so their
order does not move the figure). For each pair of consecutive requests (pairs with a
`ContextCompacted` between them are left out) it prints the share of request k that
is a prefix of request k+1, in bytes and in cl100k tokens, twice: as sent, and with
the `cache_control` markers taken out (the vendor's cache matches content; a marker
says where to cache, it is not part of what is cached). It then says where the two
requests part, and how much of request k+1 the cache written by request k can serve.

python -m bench.prefix_stability [--steps N] [--context-window TOKENS]
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import hashlib
import json
import tempfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from adapters.llm.anthropic_wire import to_wire
from adapters.llm.gemini_wire import to_config, to_contents
from adapters.llm.openai_responses import to_responses
from adapters.llm.openai_wire import to_chat
from adapters.llm.scripted import ScriptedLLM
from adapters.llm.tokens import TiktokenCounter
from application.engine_settings import EngineSettings
from bench.engine_harness import build_engine
from bench.harness import cores
from domain.conversation import (
    ModelRequest,
    ModelTurn,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
)

TARGET = 0.95
PLAN = [f"Step {n}: investigate aspect {n} of the question" for n in range(1, 11)]
Body = dict[str, object]


def research_turn(n: int, steps: int) -> ModelTurn:
    """Turn `n` of a session that plans, searches, records and notes, in a 10-step cycle."""
    sig = hashlib.sha256(f"turn {n}".encode()).hexdigest() * 6  # real ones are long, opaque
    thinking = ThinkingBlock(f"Turn {n}: weigh what I know so far. " * (4 + n % 7), sig)
    usage = Usage(input_tokens=2000 + 400 * n, output_tokens=120)
    if n >= steps:
        return ModelTurn((thinking, TextBlock("Here is the answer.")), "end_turn", usage, "s")
    phase = n % 10
    uses: list[tuple[str, dict[str, object]]] = []
    if phase == 0:
        items = [{"title": t, "status": _status(i, n // 10)} for i, t in enumerate(PLAN)]
        uses.append(("update_plan", {"items": items}))
    elif phase in (1, 2, 4, 5, 7, 8):
        uses.append(("search", {"query": f"aspect {n // 10 + 1} source {phase}"}))
    elif phase in (3, 6):
        source = {"url": f"https://example.org/{n}", "title": f"Source {n}"}
        uses.append(("record_finding", {"text": f"Finding {n}: it holds.", "citations": [source]}))
        if phase == 6:
            uses.append(("note_progress", {"text": f"recorded finding {n}"}))
    else:
        uses.append(("note_progress", {"text": f"turn {n}: searched aspect {n // 10 + 1}"}))
    blocks: list[TextBlock | ThinkingBlock | ToolUseBlock] = [thinking]
    if n % 3 == 0:
        blocks.append(TextBlock(f"Next I will {uses[0][0].replace('_', ' ')}."))
    blocks += [ToolUseBlock(f"toolu_{n:04d}_{i}", name, a) for i, (name, a) in enumerate(uses)]
    return ModelTurn(tuple(blocks), "tool_use", usage, "s")


def _status(item: int, current: int) -> str:
    return "done" if item < current else "in_progress" if item == current else "pending"


def research_model(steps: int) -> ScriptedLLM:
    turns = iter(range(steps + 1))

    def turn(request: ModelRequest) -> ModelTurn:
        if not request.tools:  # the runner asks for a summary before it compacts
            summary = TextBlock("Summary: the plan, the findings so far and their sources.")
            return ModelTurn((summary,), "end_turn", Usage(500, 50), "s")
        return research_turn(next(turns), steps)

    return ScriptedLLM(turn)


def wire_body(request: ModelRequest, *, markers: bool = True) -> Body:
    wire = to_wire(request, model="claude-sonnet-5-5", max_tokens=8192)
    body: Body = {"tools": wire.tools, "system": wire.system, "messages": wire.messages}
    return body if markers else _without_markers(body)  # type: ignore[return-value]


def _without_markers(node: object) -> object:
    if isinstance(node, dict):
        return {k: _without_markers(v) for k, v in node.items() if k != "cache_control"}
    if isinstance(node, list):
        return [_without_markers(v) for v in node]
    return node


def dumps(body: Body) -> str:
    return json.dumps(body, ensure_ascii=False)


def common_prefix(a: str, b: str) -> int:
    lo, hi = 0, min(len(a), len(b))  # binary search on slices: compared in C
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


@dataclass(frozen=True)
class Share:
    bytes: float
    tokens: float


def prefix_share(a: str, b: str, count: Callable[[str], int]) -> Share:
    n = common_prefix(a, b)
    size = len(a.encode())
    return Share(len(a[:n].encode()) / size, count(a[:n]) / count(a))


def where_they_part(k: Body, k1: Body) -> str:
    """The first place request k+1 differs from request k, in words."""
    for part in ("tools", "system"):
        if k[part] != k1[part]:
            return f"{part} changed"
    a, b = k["messages"], k1["messages"]
    assert isinstance(a, list) and isinstance(b, list)
    for i, (m, m1) in enumerate(zip(a, b, strict=False)):
        if m == m1:
            continue
        where = f"message[{i - len(a)}] ({m['role']})"
        for j, block in enumerate(m["content"]):
            other = m1["content"][j] if j < len(m1["content"]) else None
            if block == other:
                continue
            kind = _kind(block)
            if other is None:
                return f"{where} block {kind}: not in k+1 (moved to the new last message)"
            keys = sorted(k for k in {*block, *other} if block.get(k) != other.get(k))
            return f"{where} block {kind}: {', '.join(keys)} differs"
        return f"{where}: k+1 has more blocks"
    return "request k+1 only appends"


def _kind(block: dict[str, object]) -> str:
    if block["type"] == "text" and str(block["text"]).startswith("[Current plan"):
        return "text (plan recitation)"
    return str(block["type"])


def through_message(body: Body, last: int) -> str:
    """The serialized body up to the end of message `last` (a prefix of `dumps(body)`)."""
    messages = body["messages"]
    assert isinstance(messages, list)
    return dumps({**body, "messages": messages[: last + 1]})[:-2]


def before_recitation(body: Body) -> str:
    """The serialized body up to the last block before the plan recitation."""
    messages = body["messages"]
    assert isinstance(messages, list)
    last = messages[-1]
    blocks = [b for b in last["content"] if _kind(b) != "text (plan recitation)"]
    if not blocks:
        return through_message(body, len(messages) - 2)
    return dumps({**body, "messages": [*messages[:-1], {**last, "content": blocks}]})[:-4]


def cache_served(cached: str, next_text: str, count: Callable[[str], int]) -> float:
    """Share of the next request's tokens that a cache entry for `cached` serves."""
    return count(cached) / count(next_text) if next_text.startswith(cached) else 0.0


async def capture(steps: int, window: int) -> tuple[list[ModelRequest], set[int]]:
    """The main requests of one session, and the indexes k whose pair (k, k+1) to skip."""
    llm = research_model(steps)
    settings = EngineSettings(max_iterations=steps + 5, context_window=window, thinking_budget=2048)
    with tempfile.TemporaryDirectory(prefix="tokendance-bench-blobs-") as blobs:
        engine = build_engine(llm, Path(blobs), settings=settings)
        sid, _, end = await engine.run_session("Research the question thoroughly, with sources.")
        assert end == "completed", end
        compactions = sum(
            1 for e in engine.sessions.session_events(sid) if type(e).__name__ == "ContextCompacted"
        )
    main: list[ModelRequest] = []
    skip: set[int] = set()
    for request in llm.requests:
        if not request.tools:  # a summary request: a compaction is recorded next
            skip.add(len(main) - 1)
        else:
            main.append(request)
    assert len(skip) == compactions, (skip, compactions)
    return main, skip


def report(steps: int, window: int) -> None:
    main, skip = asyncio.run(capture(steps, window))
    count = functools.lru_cache(maxsize=None)(TiktokenCounter().count)
    pairs = [k for k in range(len(main) - 1) if k not in skip]
    places: Counter[str] = Counter()
    rows, lost = [], []
    for k in pairs:
        sent, sent1 = wire_body(main[k]), wire_body(main[k + 1])
        bare, bare1 = wire_body(main[k], markers=False), wire_body(main[k + 1], markers=False)
        text, text1, plain, plain1 = dumps(sent), dumps(sent1), dumps(bare), dumps(bare1)
        places[f"as sent: {where_they_part(sent, sent1)}"] += 1
        places[f"content: {where_they_part(bare, bare1)}"] += 1
        rows.append(
            (
                prefix_share(text, text1, count),
                prefix_share(plain, plain1, count),
                cache_served(through_message(bare, len(main[k].messages) - 2), plain1, count),
                cache_served(before_recitation(bare), plain1, count),
            )
        )
        tail = count(plain) - count(before_recitation(bare))
        lost.append((count(text) - count(text[: common_prefix(text, text1)]), tail))
    frozen = count(dumps({**wire_body(main[0], markers=False), "messages": []}))
    print(f"cores: {cores()}")
    print(f"requests: {len(main)}; pairs: {len(pairs)}; left out (compaction between): {len(skip)}")
    sizes = [count(dumps(wire_body(r))) for r in main]
    print(
        f"tokens per request (cl100k): first {sizes[0]:,}, mean {sum(sizes) / len(sizes):,.0f}, "
        f"last {sizes[-1]:,}; of which tools + system: {frozen:,}"
    )
    for label, pick in (("as sent", 0), ("without cache_control markers", 1)):
        for unit in ("bytes", "tokens"):
            values = [getattr(row[pick], unit) for row in rows]
            worst = min(range(len(values)), key=values.__getitem__)
            below = sum(1 for v in values if v < TARGET)
            print(
                f"prefix share, {label}, {unit}: mean {sum(values) / len(values):.2%}, "
                f"min {values[worst]:.2%} at k={pairs[worst]} (target >= {TARGET:.0%}); "
                f"{below} pairs below target"
            )
    print(
        f"tokens of request k not in the common prefix, mean: as sent {_mean(lost, 0):.0f}, "
        f"without markers (the plan recitation) {_mean(lost, 1):.0f}"
    )
    for label, pick in (("now, on message[-2]", 2), ("if on the last block before the plan", 3)):
        values = [row[pick] for row in rows]
        print(
            f"share of request k+1 served by request k's message breakpoint ({label}): "
            f"mean {sum(values) / len(values):.2%}, min {min(values):.2%}"
        )
    print("where request k+1 first differs from request k:")
    for place, n in places.most_common():
        print(f"  {n:4d} x {place}")
    providers(main, pairs, count)


# Each body in the order the vendor renders it into the prompt it caches (tools, the
# system prompt, then the conversation); the call's settings are not part of the prompt.
def _openai_chat(request: ModelRequest) -> str:
    body = to_chat(request, model="gpt-4.1", max_tokens=8192)
    return dumps({"tools": body.get("tools"), "messages": body["messages"]})


def _openai_responses(request: ModelRequest) -> str:
    body = to_responses(request, model="gpt-4.1", max_tokens=8192)
    return dumps({k: body.get(k) for k in ("tools", "instructions", "input")})


def _gemini(request: ModelRequest) -> str:
    config = to_config(request, max_tokens=8192).model_dump(mode="json", exclude_none=True)
    contents = [c.model_dump(mode="json", exclude_none=True) for c in to_contents(request.messages)]
    prompt = {k: config.get(k) for k in ("tools", "system_instruction")}
    return dumps({**prompt, "contents": contents})


RENDERERS: dict[str, Callable[[ModelRequest], str]] = {
    "anthropic (as sent, markers included)": lambda r: dumps(wire_body(r)),
    "openai chat completions": _openai_chat,
    "openai responses": _openai_responses,
    "gemini": _gemini,
}


def providers(main: list[ModelRequest], pairs: list[int], count: Callable[[str], int]) -> None:
    """Each provider's own rendering of the same requests: how much of request k+1 is the
    byte-identical prefix it shares with request k (the most OpenAI's automatic or
    Gemini's implicit prefix caching can serve)."""
    print("per provider, share of request k+1 in the prefix it shares with request k (tokens):")
    for name, render in RENDERERS.items():
        bodies = [render(r) for r in main]
        served = [
            count(bodies[k][: common_prefix(bodies[k], bodies[k + 1])]) / count(bodies[k + 1])
            for k in pairs
        ]
        print(f"  {name}: mean {sum(served) / len(served):.2%}, min {min(served):.2%}")


def _mean(rows: list[tuple[int, int]], i: int) -> float:
    return sum(r[i] for r in rows) / len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--context-window", type=int, default=200_000)
    options = parser.parse_args()
    report(options.steps, options.context_window)


if __name__ == "__main__":
    main()
