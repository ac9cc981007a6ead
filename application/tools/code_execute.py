"""The `code_execute` tool: Python in the sandbox, over a copy of the workspace's files.

The code runs in a fresh work directory holding the workspace's files (its current
directory), with no network and bounded time, memory, processes, files and output
(`Sandbox` port). What it creates or changes comes back as workspace files, images and
documents also as artifacts of the session. The result is JSON (exit code, duration,
stdout, stderr, files); output past what the context keeps is in the blob store, named
in the result. A limit reached is a kept failure that names the limit.
"""

from __future__ import annotations

import json
import mimetypes
from collections.abc import Mapping
from dataclasses import replace
from pathlib import PurePosixPath
from typing import Annotated

import msgspec
from msgspec import Meta

from application.ports import (
    Sandbox,
    SandboxLimit,
    SandboxLimits,
    SandboxResult,
    SandboxRun,
    SandboxUnavailable,
    ToolExecutionError,
)
from application.tools.base import Tool, ToolContext
from application.workspace_files import WorkspaceFiles
from domain.authors import ByAgent
from domain.errors import DomainError
from domain.values import ArtifactKind

# No .pyc files written; no user site. Not -I: the work directory stays importable, so
# code can import the helper modules it wrote there.
PYTHON = ("python3", "-B", "-s")
MAX_FILES_SHOWN = 30
OUTPUT_SHOWN = 1200  # characters of stdout and of stderr the result shows (head and tail)
MAX_INPUT_BYTES = 256 * 1024 * 1024  # the workspace's files copied into one run, at most
ARTIFACT_SUFFIXES: Mapping[str, ArtifactKind] = {
    ".png": "file", ".jpg": "file", ".jpeg": "file", ".gif": "file", ".svg": "file",
    ".webp": "file", ".pdf": "report", ".docx": "report", ".xlsx": "file", ".pptx": "ppt",
    ".html": "report", ".md": "report",
}  # fmt: skip
LIMITS_SAID: Mapping[SandboxLimit, str] = {
    "wall_time": "the time limit ({wall:g} s of wall-clock time)",
    "cpu_time": "the CPU time limit ({cpu} s)",
    "memory": "the memory limit ({memory} MiB)",
    "processes": "the process limit ({processes} processes)",
    "file_size": "the file size limit ({file} MiB per file)",
    "output": "the output limit ({output} KiB on stdout or stderr)",
}


class CodeExecuteArgs(msgspec.Struct, forbid_unknown_fields=True):
    code: Annotated[
        str,
        Meta(min_length=1, max_length=200_000, description="Python 3.11 source to run."),
    ]
    timeout: (
        Annotated[
            int,
            Meta(ge=1, description="Seconds of wall-clock time; default and maximum per server."),
        ]
        | None
    ) = None


class CodeExecuteError(ToolExecutionError):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class CodeExecute(Tool[CodeExecuteArgs]):
    name = "code_execute"
    description = (
        "Run Python 3.11 in a sandbox (numpy, pandas and matplotlib are installed). Its "
        "current directory holds the workspace's files by their names; files it writes "
        "there are saved to the workspace, and images and documents become artifacts the "
        "user can download. No network. Time, memory, processes and output are limited. "
        "Returns JSON: exit_code, duration_ms, stdout, stderr, files."
    )
    Args = CodeExecuteArgs
    risky = True  # it runs code: asks for approval under the default policy
    json_output = True
    timeout = 15 * 60.0  # the sandbox's own wall-clock kill comes first

    def __init__(
        self,
        sandbox: Sandbox,
        *,
        limits: SandboxLimits,
        max_wall_seconds: float,
        python: tuple[str, ...] = PYTHON,
        files: WorkspaceFiles | None = None,
        allow_domains: tuple[str, ...] = (),
    ) -> None:
        self.sandbox = sandbox
        self.limits = limits
        self.max_wall_seconds = max_wall_seconds
        self.python = python
        self.files = files
        self.allow_domains = allow_domains

    async def run(self, args: CodeExecuteArgs, context: ToolContext) -> str:
        _check_syntax(args.code)
        limits = self._limits(args.timeout)
        inputs = await self._workspace_files(context)
        result = await run_sandboxed(
            self.sandbox,
            SandboxRun(
                argv=(*self.python, "-"),
                files=inputs,
                limits=limits,
                allow_domains=self.allow_domains,
                stdin=args.code.encode(),
            ),
        )
        if result.limit is not None:  # a run cut short keeps nothing it wrote
            raise limit_reached(result.limit, limits, await output_report(result, context))
        written = await self._keep_files(result.files, context)
        return await output_report(result, context, written)

    def _limits(self, timeout: int | None) -> SandboxLimits:
        if timeout is None:
            return self.limits
        if timeout > self.max_wall_seconds:
            raise CodeExecuteError(
                "TIMEOUT_TOO_LONG",
                f"timeout {timeout} s is above the maximum of {self.max_wall_seconds:g} s",
            )
        return replace(self.limits, wall_seconds=float(timeout))

    async def _workspace_files(self, context: ToolContext) -> dict[str, bytes]:
        if self.files is None or context.workspace_id is None:
            return {}
        found: dict[str, bytes] = {}
        total = 0
        for entry in await self.files.list(context.workspace_id):
            data = await self.files.read(context.workspace_id, entry.path)
            total += len(data)
            if total > MAX_INPUT_BYTES:
                raise CodeExecuteError(
                    "WORKSPACE_TOO_LARGE",
                    f"the workspace's files are over {MAX_INPUT_BYTES // 2**20} MiB together: "
                    "too much to copy into the sandbox",
                )
            found[entry.path] = data
        return found

    async def _keep_files(
        self, written: Mapping[str, bytes], context: ToolContext
    ) -> list[dict[str, object]]:
        """Each file the code wrote: into the workspace, and as an artifact if it is an
        image or a document."""
        kept: list[dict[str, object]] = []
        for path, data in sorted(written.items()):
            media_type = mimetypes.guess_type(path)[0] or "application/octet-stream"
            entry: dict[str, object] = {"path": path, "size": len(data)}
            if self.files is not None and context.workspace_id is not None:
                by = ByAgent(context.session_id)
                try:
                    await self.files.write(context.workspace_id, path, data, media_type, by)
                    entry["saved_to_workspace"] = True
                except DomainError as e:  # a name or size the workspace refuses
                    entry["not_saved"] = str(e)
            kind = ARTIFACT_SUFFIXES.get(PurePosixPath(path).suffix.lower())
            if kind is not None:
                name = PurePosixPath(path).name
                ref = await context.notes.create_artifact(kind, name, data, media_type)
                entry["artifact_id"] = str(ref.artifact_id)
            kept.append(entry)
        return kept


def _check_syntax(code: str) -> None:
    """Code that does not parse fails here, before any sandbox starts."""
    try:
        compile(code, "<code>", "exec", dont_inherit=True)
    except SyntaxError as e:
        where = f"line {e.lineno}" + (f", column {e.offset}" if e.offset else "")
        raise CodeExecuteError(
            "SYNTAX_ERROR", f"the code does not parse: {e.msg} ({where})"
        ) from None
    except ValueError as e:  # a NUL byte in the source
        raise CodeExecuteError("SYNTAX_ERROR", f"the code does not parse: {e}") from None


async def run_sandboxed(sandbox: Sandbox, run: SandboxRun) -> SandboxResult:
    """The run's result; a sandbox that cannot run here is a kept failure saying why."""
    try:
        return await sandbox.run(run)
    except SandboxUnavailable as e:
        raise CodeExecuteError(SandboxUnavailable.code, str(e)) from None


def limit_reached(limit: SandboxLimit, limits: SandboxLimits, report: str) -> CodeExecuteError:
    """The kept failure of a run a limit stopped: which limit, and what it printed."""
    said = LIMITS_SAID[limit].format(
        wall=limits.wall_seconds, cpu=limits.cpu_seconds, memory=limits.memory_bytes // 2**20,
        processes=limits.processes, file=limits.file_bytes // 2**20,
        output=limits.output_bytes // 1024,
    )  # fmt: skip
    return CodeExecuteError(
        "LIMIT_REACHED",
        f"the code was stopped: it reached {said}; nothing it wrote was kept\n{report}",
    )


async def output_report(
    result: SandboxResult, context: ToolContext, files: list[dict[str, object]] | None = None
) -> str:
    """The result as JSON: whole output when short, else head and tail with the whole
    kept in the blob store; the files written, when they are kept."""
    shown: dict[str, object] = {"exit_code": result.exit_code, "duration_ms": result.duration_ms}
    for name, text, truncated in (
        ("stdout", result.stdout, result.stdout_truncated),
        ("stderr", result.stderr, result.stderr_truncated),
    ):
        shown[name] = _head_and_tail(text)
        if len(text) > OUTPUT_SHOWN:
            shown[f"{name}_blob"] = await context.notes.keep(text.encode(), "text/plain")
        if truncated:
            shown[f"{name}_truncated"] = True
    if files is not None:
        shown["files"] = files[:MAX_FILES_SHOWN]
        if len(files) > MAX_FILES_SHOWN:
            shown["files_not_shown"] = len(files) - MAX_FILES_SHOWN
    return json.dumps(shown, ensure_ascii=False)


def _head_and_tail(text: str) -> str:
    if len(text) <= OUTPUT_SHOWN:
        return text
    head, tail = text[: OUTPUT_SHOWN * 2 // 3], text[-(OUTPUT_SHOWN // 3) :]
    return f"{head}\n[... {len(text) - len(head) - len(tail)} characters omitted ...]\n{tail}"
