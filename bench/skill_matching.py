"""What choosing a skill costs per user message, with 50 skills installed.

49 synthetic skills (7 actions x 7 kinds of document, tags in English and Chinese, so
keywords collide as they do in a real catalogue) are written to a temporary folder
beside the built-in `deep-research`; the registry discovers all 50 and the matcher
embeds their profiles once. Then a mix of messages is matched many times: keyword hits
in both languages, keyword ties (settled by embedding), requests with no keyword (the
embedding path, the slowest), and small talk. Prints the median and p99 of one `match`
call, overall and per kind, plus the start-up cost. Target: median under 5 ms with the
local model.

python -m bench.skill_matching [--embedder wordllama|hashing] [--rounds N]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from adapters.embeddings import build_embedder
from application.skills import SkillMatcher, SkillRegistry, builtin_skills_dir
from bench.harness import cores, median, percentile

TARGET_MEDIAN_MS = 5.0
ACTIONS = [
    ("summarize", "总结"),
    ("translate", "翻译"),
    ("format", "排版"),
    ("audit", "审计"),
    ("plan", "规划"),
    ("draft", "起草"),
    ("compare", "比较"),
]
THINGS = [
    ("contract", "合同"),
    ("invoice", "发票"),
    ("recipe", "食谱"),
    ("itinerary", "行程"),
    ("resume", "简历"),
    ("lesson", "课程"),
    ("podcast", "播客"),
]
MESSAGES = {
    "keyword (zh)": "帮我调研AI Agent市场",
    "keyword (en)": "research the AI agent market",
    "keyword tie": "please translate and summarize this contract for me",
    "no keyword (en)": "find out who leads electric vehicle sales and why, with sources",
    "no keyword (zh)": "我想了解一下新能源汽车行业的竞争格局",
    "off-topic": "what should I cook tonight with leftover rice",
    "small talk": "你好",
}


def write_synthetic_skills(root: Path) -> None:
    """49 skills in the Agent Skills format, one per action and kind of document."""
    for action, action_zh in ACTIONS:
        for thing, thing_zh in THINGS:
            name = f"{action}-{thing}"
            (root / name).mkdir()
            (root / name / "SKILL.md").write_text(
                f"---\nname: {name}\n"
                f"description: {action.capitalize()}s a {thing} step by step and checks the "
                f"result. Use it when the user wants to {action} a {thing} "
                f"(for example '{action_zh}{thing_zh}').\n"
                f"metadata:\n  display_name: {action.capitalize()} {thing}\n"
                f"  tags: '{action}, {action_zh}, {thing}, {thing_zh}'\n---\n"
                f"Steps to {action} a {thing}.\n",
                encoding="utf-8",
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embedder", default="wordllama", choices=["wordllama", "hashing"])
    parser.add_argument("--rounds", type=int, default=500)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="skills-bench-") as extra:
        write_synthetic_skills(Path(extra))
        started = time.perf_counter()
        embedder = build_embedder(args.embedder)
        loaded = time.perf_counter()
        registry = SkillRegistry.discover(builtin_skills_dir(), Path(extra))
        matcher = SkillMatcher(registry, embedder)
        built = time.perf_counter()

        timings: dict[str, list[float]] = {kind: [] for kind in MESSAGES}
        outcome: dict[str, str] = {}
        for _ in range(args.rounds):
            for kind, message in MESSAGES.items():
                t0 = time.perf_counter()
                match = matcher.match(message)
                timings[kind].append((time.perf_counter() - t0) * 1000)
                outcome[kind] = f"{match.skill.name} by {match.by}" if match else "none"

    everything = [t for ts in timings.values() for t in ts]
    print(f"skill matching: {len(registry)} skills, embedder {args.embedder}, {cores()} cores")
    print(
        f"  start-up: model load {(loaded - started) * 1000:.0f} ms, "
        f"discover + precompute {(built - loaded) * 1000:.0f} ms"
    )
    print(f"  {'kind':<16}{'median ms':>10}{'p99 ms':>9}  picks")
    for kind, ts in timings.items():
        print(f"  {kind:<16}{median(ts):>10.3f}{percentile(ts, 99):>9.3f}  {outcome[kind]}")
    overall = median(everything)
    verdict = "met" if overall < TARGET_MEDIAN_MS else "MISSED"
    print(
        f"  all {len(everything)} calls: median {overall:.3f} ms, "
        f"p99 {percentile(everything, 99):.3f} ms "
        f"(target median < {TARGET_MEDIAN_MS} ms: {verdict})"
    )


if __name__ == "__main__":
    main()
