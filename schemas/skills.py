"""Wire formats of the skills API (`/api/v1/skills`)."""

from __future__ import annotations

import msgspec


class SkillOut(msgspec.Struct, kw_only=True):
    name: str
    display_name: str
    description: str
    version: str
    tags: list[str]
    allowed_tools: list[str] | None  # None: any tool


class SkillDetail(SkillOut, kw_only=True):
    body: str  # the instructions (Level 2), as SKILL.md has them after its front matter


class SkillList(msgspec.Struct, kw_only=True):
    items: list[SkillOut]
