"""Built-in tool `activate_skill`: the model takes up a skill from the catalog itself."""

from __future__ import annotations

import msgspec

from application.ports import ToolExecutionError
from application.skills.service import Skills, spec_of
from application.tools.base import Tool, ToolContext


class ActivateSkillArgs(msgspec.Struct, forbid_unknown_fields=True):
    name: str


class ActivateSkill(Tool[ActivateSkillArgs]):
    name = "activate_skill"
    description = (
        "Take up one of the skills listed in your instructions by its name: you get its "
        "instructions, and its tools and limits apply from then on."
    )
    Args = ActivateSkillArgs
    replayable = True  # its only effect is the `SkillActivated` event

    def __init__(self, skills: Skills) -> None:
        self._skills = skills

    async def run(self, args: ActivateSkillArgs, context: ToolContext) -> str:
        skill = self._skills.get(args.name.strip())
        if skill is None:
            known = ", ".join(self._skills.registry.names) or "none"
            raise ToolExecutionError(f"no skill is called {args.name!r}; the skills are: {known}")
        spec = spec_of(skill)
        await context.notes.activate_skill(spec)
        return f"[Skill activated: {spec.name}]\n\n{spec.instructions}"
