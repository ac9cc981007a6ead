"""Picks at most one skill for a user message: keywords first, then embedding similarity.

Keywords are a skill's tags, keywords and display name, in whatever languages the skill
lists them. Text in a CJK script has no spaces, so a CJK keyword matches as a substring;
a Latin one matches as a whole word (plural and -ed/-ing forms included), so "art" does
not match "start". When no keyword hits, the message is embedded and compared with each
skill's description and tags (embedded once, at start); the best above the threshold wins.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from operator import mul
from typing import Literal

from application.ports import Embedder
from application.skills.registry import SkillRegistry
from application.skills.skill import Skill

# Set for precision with the WordLlama model: related English requests score about
# 0.2-0.35 against a skill profile, unrelated ones up to about 0.25 (Chinese text, which
# its vocabulary covers poorly, up to about 0.3). A wrong skill prunes the tools; a
# missed one costs little, since the catalog lets the model activate it itself.
DEFAULT_THRESHOLD = 0.3

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
_HAS_CJK = re.compile(f"[{_CJK}]")
_LATIN = "0-9a-z\u00c0-\u024f"
_SPACES = r"\s+"
_WORDS = re.compile(f"[{_LATIN}']+|[{_CJK}]+")
# Messages made only of these are small talk: they never activate a skill.
_SMALL_TALK_EN = (
    "hi hello hey yo hiya howdy thanks thank you thx ty cheers ok okay bye goodbye good "
    "morning afternoon evening night great cool nice please sure yes no so much very a lot"
)
_SMALL_TALK_ZH = (
    "你好 您好 你好啊 嗨 哈喽 谢谢 谢谢你 多谢 感谢 "  # hello, thanks
    "再见 拜拜 早 早上好 晚上好 好的 好 嗯"  # bye, good morning, ok
)
_SMALL_TALK = frozenset(f"{_SMALL_TALK_EN} {_SMALL_TALK_ZH}".split())


@dataclass(frozen=True)
class SkillMatch:
    """The skill chosen for a message, how, and how strongly.

    `score` is the number of distinct keywords found when `by` is "keyword", and the
    cosine similarity when `by` is "embedding".
    """

    skill: Skill
    score: float
    by: Literal["keyword", "embedding"]
    keywords: tuple[str, ...] = ()


class SkillMatcher:
    """Matches messages against the registry's skills; build once, call `match` per message."""

    def __init__(
        self, registry: SkillRegistry, embedder: Embedder, *, threshold: float = DEFAULT_THRESHOLD
    ) -> None:
        self._skills = list(registry)
        self._embedder = embedder
        self.threshold = threshold
        self._keywords = [_KeywordIndex(s) for s in self._skills]
        texts = [_profile(s) for s in self._skills]
        self._vectors = [_unit(v) for v in embedder.embed(texts)] if texts else []

    def match(self, message: str) -> SkillMatch | None:
        """The one skill for `message`, or None (small talk, or nothing close enough)."""
        text = message.casefold()
        words = _WORDS.findall(text)
        if not words or all(w in _SMALL_TALK for w in words):
            return None
        return self._by_keyword(message, text) or self._by_embedding(message)

    def _by_keyword(self, message: str, folded: str) -> SkillMatch | None:
        found_per_skill = [k.find(folded) for k in self._keywords]
        hits = [(i, found) for i, found in enumerate(found_per_skill) if found]
        if not hits:
            return None
        most = max(len(found) for _, found in hits)
        best = [(i, found) for i, found in hits if len(found) == most]
        if len(best) > 1:  # a tie on keywords goes to the closer description
            similarity = self._similarities(message)
            best.sort(key=lambda hit: -similarity[hit[0]])
        i, found = best[0]
        return SkillMatch(self._skills[i], float(len(found)), "keyword", found)

    def _by_embedding(self, message: str) -> SkillMatch | None:
        if not self._skills:
            return None
        similarity = self._similarities(message)
        i = max(range(len(similarity)), key=similarity.__getitem__)
        if similarity[i] < self.threshold:
            return None
        return SkillMatch(self._skills[i], similarity[i], "embedding")

    def _similarities(self, text: str) -> list[float]:
        query = self._embedder.embed_query(text)
        q = _unit(query)
        return [sum(map(mul, q, v)) for v in self._vectors]


class _KeywordIndex:
    """One skill's keywords, compiled: Latin ones into one regex, CJK ones as substrings."""

    def __init__(self, skill: Skill) -> None:
        terms = list(dict.fromkeys(t.casefold() for t in (*skill.triggers, skill.display_name)))
        self._cjk = [t for t in terms if _HAS_CJK.search(t)]
        # Longest first, so "deep research" wins over "research" where both would match.
        latin = [t for t in terms if t.strip() and not _HAS_CJK.search(t)]
        self._latin = sorted(latin, key=len, reverse=True)
        groups = "|".join(f"({_SPACES.join(map(re.escape, t.split()))})" for t in self._latin)
        self._regex = (
            re.compile(f"(?<![{_LATIN}])(?:{groups})(?:s|es|ed|ing)?(?![{_LATIN}])")
            if self._latin
            else None
        )

    def find(self, text: str) -> tuple[str, ...]:
        """The distinct keywords present in `text` (already case-folded)."""
        found = [t for t in self._cjk if t in text]
        if self._regex is not None:
            matches = self._regex.finditer(text)
            found += [self._latin[m.lastindex - 1] for m in matches if m.lastindex]
        return tuple(dict.fromkeys(found))


def _profile(skill: Skill) -> str:
    """What a skill is compared with: its name, description and tags."""
    return f"{skill.display_name}. {skill.description} {', '.join(skill.triggers)}"


def _unit(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else [0.0] * len(vector)
