"""The installed skills: what each is for, and a skill's instructions."""

from __future__ import annotations

from litestar import Controller, get
from litestar.params import FromPath

from adapters.http.deps import ApiDep
from application.skills.skill import Skill
from domain.errors import NotFound
from schemas.skills import SkillDetail, SkillList, SkillOut


class SkillNotFound(NotFound):
    def __init__(self, name: str) -> None:
        super().__init__(f"no skill is called {name!r}")


class SkillController(Controller):
    path = "/api/v1/skills"
    tags = ["skills"]

    @get("/")
    async def list_skills(self, api: ApiDep) -> SkillList:
        """Every enabled skill (Level 1: what it does and when to use it)."""
        return SkillList(items=[_out(s) for s in api.skills.registry])

    @get("/{name:str}")
    async def get_skill(self, name: FromPath[str], api: ApiDep) -> SkillDetail:
        """One skill with its instructions (an underscore name finds the hyphen one)."""
        skill = api.skills.get(name)
        if skill is None:
            raise SkillNotFound(name)
        out = _out(skill)
        return SkillDetail(**{f: getattr(out, f) for f in out.__struct_fields__}, body=skill.body)


def _out(skill: Skill) -> SkillOut:
    return SkillOut(
        name=skill.name,
        display_name=skill.display_name,
        description=skill.description,
        version=skill.version,
        tags=list(skill.tags),
        allowed_tools=None if skill.allowed_tools is None else list(skill.allowed_tools),
    )
