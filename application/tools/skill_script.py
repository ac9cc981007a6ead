"""The `run_skill_script` tool: a script of the active skill (Level 3), run in the sandbox.

The script's folder (`scripts/` of the skill) is copied into a fresh work directory and
the script runs there with its arguments, under the same limits as `code_execute`.
Only its output enters the context: files it writes are not kept.
"""

from __future__ import annotations

import asyncio
from pathlib import PurePosixPath
from typing import Annotated

import msgspec
from msgspec import Meta

from application.ports import Sandbox, SandboxLimits, SandboxRun, ToolExecutionError
from application.skills import SkillFileError, folder_files
from application.skills.service import Skills
from application.tools.base import Tool, ToolContext
from application.tools.code_execute import (
    PYTHON,
    CodeExecuteError,
    limit_reached,
    output_report,
    run_sandboxed,
)

SCRIPTS = "scripts"
# Seed 004 keeps a skill's runnable scripts in `resources/`; the Agent Skills spec in
# `scripts/`. Either runs.
SCRIPT_FOLDERS = (SCRIPTS, "resources")
SHELL = ("/bin/sh",)


class RunSkillScriptArgs(msgspec.Struct, forbid_unknown_fields=True):
    path: Annotated[
        str,
        Meta(
            min_length=1,
            max_length=300,
            description="scripts/<file> (or resources/<file>) inside the skill.",
        ),
    ]
    args: Annotated[
        list[Annotated[str, Meta(max_length=4096)]],
        Meta(max_length=64, description="Command-line arguments for the script."),
    ] = []


class RunSkillScript(Tool[RunSkillScriptArgs]):
    name = "run_skill_script"
    description = (
        "Run a script from the active skill's scripts/ (or resources/) folder (Python or "
        "shell) in the sandbox, with arguments; returns its exit code, stdout and stderr "
        "as JSON. No network; files it writes are not kept."
    )
    Args = RunSkillScriptArgs
    risky = True  # it runs code
    timeout = 15 * 60.0  # the sandbox's own wall-clock kill comes first

    def __init__(
        self,
        sandbox: Sandbox,
        skills: Skills,
        *,
        limits: SandboxLimits,
        python: tuple[str, ...] = PYTHON,
    ) -> None:
        self.sandbox = sandbox
        self.skills = skills
        self.limits = limits
        self.python = python

    async def run(self, args: RunSkillScriptArgs, context: ToolContext) -> str:
        name = await context.notes.active_skill()
        skill = self.skills.get(name) if name else None
        if skill is None:
            raise ToolExecutionError("no skill is active: activate one before running its scripts")
        script = PurePosixPath(args.path.strip())
        if script.parts[0] not in SCRIPT_FOLDERS or len(script.parts) < 2:
            raise CodeExecuteError(
                "NOT_A_SCRIPT",
                f"{args.path} is not in the skill's {' or '.join(SCRIPT_FOLDERS)} folder",
            )
        runner = {".py": self.python, ".sh": SHELL}.get(script.suffix)
        if runner is None:
            raise CodeExecuteError(
                "NOT_A_SCRIPT",
                f"{args.path}: only Python (.py) and shell (.sh) scripts run",
            )
        try:
            files = await asyncio.to_thread(folder_files, skill, script.parts[0])
        except SkillFileError as e:
            raise ToolExecutionError(str(e)) from None
        if script.as_posix() not in files:
            listed = ", ".join(sorted(files)) or "nothing"
            raise CodeExecuteError(
                "NOT_A_SCRIPT", f"skill {skill.name} has no {script}; its scripts: {listed}"
            )
        result = await run_sandboxed(
            self.sandbox,
            SandboxRun(argv=(*runner, str(script), *args.args), files=files, limits=self.limits),
        )
        report = await output_report(result, context)
        if result.limit is not None:
            raise limit_reached(result.limit, self.limits, report)
        return report
