"""Built-in tool `read_skill_file`: Level 3 of a skill, a file of the active skill."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from uuid import UUID

import msgspec

from application.ports import ToolExecutionError
from application.skills import Skill, SkillFileError, read_file
from application.tools.base import Tool, ToolContext

# Session id to the skill active in it (None when none is): the runner's knowledge.
ActiveSkill = Callable[[UUID], Skill | None]


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

    def __init__(self, active_skill: ActiveSkill) -> None:
        self._active_skill = active_skill

    async def run(self, args: ReadSkillFileArgs, context: ToolContext) -> str:
        skill = self._active_skill(context.session_id)
        if skill is None:
            raise ToolExecutionError("no skill is active: activate one before reading its files")
        try:
            return await asyncio.to_thread(read_file, skill, args.path)
        except SkillFileError as e:
            raise ToolExecutionError(str(e)) from None
