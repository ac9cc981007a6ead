"""A skill as the agent uses it: Level 1 metadata, Level 2 instructions, its folder."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DEFAULT_MAX_ITERATIONS = 30
DEFAULT_TIMEOUT_SECONDS = 300


class SkillError(Exception):
    """A `SKILL.md` (or a skill folder) that cannot be loaded: which file, which field, why."""

    def __init__(self, file: Path, field: str, message: str) -> None:
        super().__init__(f"{file}: {field}: {message}")
        self.file = file
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Skill:
    """One skill folder in the Agent Skills format, with the product's own fields.

    `name` and `description` are Level 1 (always in the system prompt); `body` is
    Level 2 (injected when the skill is activated); the other files of `folder` are
    Level 3 (read on demand with `read_skill_file`).
    """

    name: str
    description: str
    body: str
    folder: Path
    # Hash of `body`, so an activation can record which instructions the model saw.
    instructions_sha256: str
    display_name: str
    version: str = ""
    author: str = ""
    # Tags and keywords trigger keyword matching; they may be in any language.
    tags: tuple[str, ...] = ()
    keywords: tuple[str, ...] = ()
    # None: the skill does not restrict the tools; a tuple: only these are offered.
    allowed_tools: tuple[str, ...] | None = None
    max_iterations: int = DEFAULT_MAX_ITERATIONS
    timeout: int = DEFAULT_TIMEOUT_SECONDS
    enabled: bool = True
    license: str | None = None
    compatibility: str | None = None
    model: str | None = None  # the model it prefers (a session's or workspace's wins)

    @property
    def skill_file(self) -> Path:
        return self.folder / "SKILL.md"

    @property
    def triggers(self) -> tuple[str, ...]:
        """Tags then keywords, without repeats: what keyword matching looks for."""
        return tuple(dict.fromkeys((*self.tags, *self.keywords)))
