"""Built-in tool `read_skill_file`: Level 3 of a skill, a file of the active skill."""

from __future__ import annotations

import asyncio

import msgspec

from application.ports import ToolExecutionError
from application.skills import SkillFileError, read_file
from application.skills.service import Skills
from application.tools.base import Tool, ToolContext


class ReadSkillFileArgs(msgspec.Struct, forbid_unknown_fields=True):
    path: str


class ReadSkillFile(Tool[ReadSkillFileArgs]):
    name = "read_skill_file"
    description = (
        "Read a file of the active skill: a reference, template or script that its "
        "instructions point to, by its path inside the skill folder "
        "(for example references/report-template.md)."
    )
    Args = ReadSkillFileArgs

    replayable = True  # it reads a file of the skill: the same on a replay

    def __init__(self, skills: Skills) -> None:
        self._skills = skills

    async def run(self, args: ReadSkillFileArgs, context: ToolContext) -> str:
        name = await context.notes.active_skill()
        skill = self._skills.get(name) if name else None
        if skill is None:
            raise ToolExecutionError("no skill is active: activate one before reading its files")
        try:
            return await asyncio.to_thread(read_file, skill, args.path)
        except SkillFileError as e:
            raise ToolExecutionError(str(e)) from None
