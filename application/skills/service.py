"""Skills as the engine uses them: the catalog for the system prompt (Level 1), a match
for a user message, and the spec a session records when a skill is activated."""

from __future__ import annotations

from application.skills.matcher import SkillMatcher
from application.skills.registry import SkillRegistry
from application.skills.skill import Skill
from domain.values import SkillActivation, SkillSpec

CATALOG_HEADER = (
    "Skills (a way of working with its own instructions; one is activated for you when a "
    "request fits it, or activate one yourself with activate_skill):"
)


class Skills:
    """The installed skills and the matcher over them."""

    def __init__(self, registry: SkillRegistry, matcher: SkillMatcher | None = None) -> None:
        self.registry = registry
        self.matcher = matcher

    def catalog(self) -> str:
        """Level 1: a line per skill, for the frozen system prompt ("" with no skills)."""
        lines = self.registry.catalog_text()
        return f"{CATALOG_HEADER}\n{lines}" if lines else ""

    def match(self, message: str) -> tuple[SkillSpec, float, SkillActivation] | None:
        """The skill for a user message, its score and how it was found; or None."""
        if self.matcher is None:
            return None
        found = self.matcher.match(message)
        if found is None:
            return None
        return spec_of(found.skill), found.score, found.by

    def get(self, name: str) -> Skill | None:
        return self.registry.get(name)


def spec_of(skill: Skill) -> SkillSpec:
    return SkillSpec(
        skill.name,
        skill.version,
        skill.body,
        skill.allowed_tools,
        skill.max_iterations,
        skill.timeout,
        skill.model,
    )
