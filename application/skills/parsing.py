"""Reads a skill folder into a `Skill`: front matter checked as the Agent Skills spec says.

The spec fields are `name`, `description`, `license`, `compatibility`, `metadata` and
`allowed-tools`. The product's own fields are read from `metadata` first (where the
spec wants extensions) and, leniently, from the top level, under either spelling
(`max_iterations` or `max-iterations`). Lists may be YAML lists or strings; `metadata`
values are strings in the spec, so `"research, 调研"` and `"web_search read_url"` work.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path

import yaml

from application.skills.skill import (
    DEFAULT_MAX_ITERATIONS,
    DEFAULT_TIMEOUT_SECONDS,
    Skill,
    SkillError,
)
from domain.errors import InvalidCommand
from domain.model_names import parse_model_name

SKILL_FILE = "SKILL.md"
# Hyphens (the Agent Skills spec) or underscores (seed 004: `deep_research`); one name
# either way for lookup (`registry.canonical_name`), shown as written.
NAME_PATTERN = re.compile(r"^[a-z0-9]+([-_][a-z0-9]+)*$")
MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1024
MAX_COMPATIBILITY_CHARS = 500

_FENCE = "---"
_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


def parse_skill(folder: Path) -> Skill:
    """The skill in `folder`, or `SkillError` naming the file, the field and the problem."""
    file = folder / SKILL_FILE
    if not file.is_file():
        raise SkillError(file, SKILL_FILE, "missing: a skill folder needs a SKILL.md")
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise SkillError(file, SKILL_FILE, f"unreadable: {e}") from None
    front, body = split_front_matter(file, text)
    fields = _Fields(file, front)
    name = fields.name(folder.name)
    body = body.strip()
    return Skill(
        name=name,
        description=fields.description(),
        body=body,
        folder=folder,
        instructions_sha256=hashlib.sha256(body.encode()).hexdigest(),
        display_name=fields.text("display_name") or name,
        version=fields.text("version"),
        author=fields.text("author"),
        tags=fields.words("tags", separators=","),
        keywords=fields.words("keywords", separators=","),
        allowed_tools=fields.tools(),
        max_iterations=fields.positive_int("max_iterations", DEFAULT_MAX_ITERATIONS),
        timeout=fields.positive_int("timeout", DEFAULT_TIMEOUT_SECONDS),
        enabled=fields.flag("enabled", default=True),
        license=fields.spec_text("license") or None,
        compatibility=fields.spec_text("compatibility", MAX_COMPATIBILITY_CHARS) or None,
        model=fields.model(),
    )


def split_front_matter(file: Path, text: str) -> tuple[Mapping[str, object], str]:
    """The YAML front matter as a mapping, and the Markdown body after it."""
    lines = text.lstrip("\ufeff").splitlines(keepends=True)
    if not lines or lines[0].strip() != _FENCE:
        raise SkillError(file, "front matter", "missing: SKILL.md must start with a '---' line")
    end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == _FENCE), None)
    if end is None:
        raise SkillError(file, "front matter", "not closed: no second '---' line")
    try:
        data = yaml.safe_load("".join(lines[1:end]))
    except yaml.YAMLError as e:
        where = getattr(e, "problem_mark", None)
        at = f" at line {where.line + 2}" if where is not None else ""
        problem = getattr(e, "problem", None) or "cannot be parsed"
        raise SkillError(file, "front matter", f"invalid YAML{at}: {problem}") from None
    if not isinstance(data, Mapping):
        raise SkillError(file, "front matter", "must be a YAML mapping of fields")
    return data, "".join(lines[end + 1 :])


class _Fields:
    """Typed reads of the front matter, each failure a `SkillError` naming the field."""

    def __init__(self, file: Path, front: Mapping[str, object]) -> None:
        self._file = file
        self._front = front
        metadata = front.get("metadata", {})
        if metadata is None:
            metadata = {}
        if not isinstance(metadata, Mapping):
            raise SkillError(file, "metadata", "must be a mapping of keys to values")
        self._metadata: Mapping[str, object] = metadata

    def _error(self, field: str, message: str) -> SkillError:
        return SkillError(self._file, field, message)

    def _lookup(self, field: str) -> object:
        """The product field from `metadata`, else the top level; either spelling."""
        spellings = (field, field.replace("_", "-"))
        for source in (self._metadata, self._front):
            for key in spellings:
                if source.get(key) is not None:
                    return source[key]
        return None

    def name(self, folder_name: str) -> str:
        value = self._front.get("name")
        if not isinstance(value, str) or not value:
            raise self._error("name", "missing: a non-empty string is required")
        if len(value) > MAX_NAME_CHARS:
            raise self._error("name", f"longer than {MAX_NAME_CHARS} characters")
        if not NAME_PATTERN.match(value):
            raise self._error(
                "name",
                f"{value!r} must be lowercase letters and digits joined by single hyphens "
                "or underscores",
            )
        if value.replace("_", "-") != folder_name.replace("_", "-"):
            raise self._error("name", f"{value!r} does not match its folder {folder_name!r}")
        return value

    def description(self) -> str:
        value = self._front.get("description")
        if not isinstance(value, str) or not value.strip():
            raise self._error("description", "missing: a non-empty string is required")
        value = " ".join(value.split())
        if len(value) > MAX_DESCRIPTION_CHARS:
            raise self._error(
                "description",
                f"too long: {len(value)} characters (at most {MAX_DESCRIPTION_CHARS})",
            )
        return value

    def spec_text(self, field: str, limit: int | None = None) -> str:
        value = self._front.get(field)
        if value is None:
            return ""
        if not isinstance(value, str):
            raise self._error(field, "must be a string")
        if limit is not None and len(value) > limit:
            raise self._error(field, f"too long: {len(value)} characters (at most {limit})")
        return value.strip()

    def text(self, field: str) -> str:
        value = self._lookup(field)
        if value is None:
            return ""
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise self._error(field, "must be a string")
        return str(value).strip()

    def model(self) -> str | None:
        """The model the skill prefers, `provider:model` (see `domain.model_names`)."""
        value = self.text("model")
        if not value:
            return None
        try:
            parse_model_name(value)
        except InvalidCommand as e:
            raise self._error("model", str(e)) from None
        return value

    def words(self, field: str, *, separators: str) -> tuple[str, ...]:
        value = self._lookup(field)
        if value is None:
            return ()
        if isinstance(value, str):
            items: list[object] = re.split(f"[{re.escape(separators)}]", value)
        elif isinstance(value, list):
            items = value
        else:
            raise self._error(field, "must be a list or a separated string")
        if not all(isinstance(i, str | int | float) for i in items):
            raise self._error(field, "every item must be a string")
        words = (str(i).strip() for i in items)
        return tuple(dict.fromkeys(w for w in words if w))

    def tools(self) -> tuple[str, ...] | None:
        # The spec's `allowed-tools` is space-separated; the product's may be a list.
        for field in ("allowed_tools", "allowed-tools"):
            if self._lookup(field) is not None:
                return self.words(field, separators=" ,\t\n")
        return None

    def positive_int(self, field: str, default: int) -> int:
        value = self._lookup(field)
        if value is None:
            return default
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise self._error(field, f"must be a positive whole number, not {value!r}")
        return value

    def flag(self, field: str, *, default: bool) -> bool:
        value = self._lookup(field)
        if value is None:
            return default
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        raise self._error(field, f"must be true or false, not {value!r}")
