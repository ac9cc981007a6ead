"""The installed skills: discovered once at start, looked up by name, listed for the prompt."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from pathlib import Path

from application.skills.parsing import SKILL_FILE, parse_skill
from application.skills.skill import Skill, SkillError

_log = logging.getLogger(__name__)


def builtin_skills_dir() -> Path:
    """The folder of the skills shipped with the product (the `skills` package)."""
    import skills  # the package holds data only; imported here to find where it is

    return Path(skills.__file__).resolve().parent


def canonical_name(name: str) -> str:
    """`deep_research`, `Deep-Research ` and `deep-research` all name `deep-research`."""
    return name.strip().lower().replace("_", "-")


class SkillRegistry:
    """Enabled skills by name; a bad or disabled skill never makes it in, nor stops the rest."""

    def __init__(self, skills: Iterable[Skill]) -> None:
        self._skills: dict[str, Skill] = {}
        for skill in skills:
            key = canonical_name(skill.name)
            if key in self._skills:
                raise ValueError(f"two skills are called {skill.name!r}")
            self._skills[key] = skill

    @classmethod
    def discover(cls, *roots: Path | None, log: logging.Logger = _log) -> SkillRegistry:
        """Every skill folder under the given roots (`None` skipped); later roots override.

        A malformed skill is left out with a warning naming its file and field, so an
        installed skill with a typo costs that skill, never the server.
        """
        found: dict[str, Skill] = {}
        for root in roots:
            if root is None:
                continue
            for skill in _scan(root, log):
                if not skill.enabled:
                    log.info("skill %s (%s) is disabled; not loaded", skill.name, skill.skill_file)
                    continue
                key = canonical_name(skill.name)
                if key in found:
                    log.warning(
                        "skill %s in %s replaces the one in %s",
                        skill.name,
                        skill.folder,
                        found[key].folder,
                    )
                found[key] = skill
        return cls(found.values())

    def __iter__(self) -> Iterator[Skill]:
        """The skills in name order."""
        return (self._skills[name] for name in self.names)

    def __len__(self) -> int:
        return len(self._skills)

    @property
    def names(self) -> list[str]:
        return sorted(self._skills)

    def get(self, name: str) -> Skill | None:
        """The skill called `name` (underscores read as hyphens), or None."""
        return self._skills.get(canonical_name(name))

    def catalog_text(self) -> str:
        """Level 1 for the system prompt: `- name: description`, one line per skill."""
        return "\n".join(f"- {s.name}: {s.description}" for s in self)


def _scan(root: Path, log: logging.Logger) -> list[Skill]:
    if not root.is_dir():
        log.warning("skills folder %s does not exist or is not a folder; skipped", root)
        return []
    skills: list[Skill] = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        # Python's caches and hidden folders sit beside the built-in skills.
        if folder.name.startswith(("_", ".")):
            continue
        if not (folder / SKILL_FILE).is_file():
            log.warning("skill folder %s has no %s; skipped", folder, SKILL_FILE)
            continue
        try:
            skills.append(parse_skill(folder))
        except SkillError as e:
            log.warning("skill skipped: %s", e)
    return skills
