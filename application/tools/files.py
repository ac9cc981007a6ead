"""The agent's workspace file tools: `list_files`, `read_file`, `write_file`, `delete_file`.

Each works in its session's workspace (`ToolContext.workspace_id`) through the
`WorkspaceFiles` service, so every write and delete is an event of the workspace that
names the session that did it. Paths are checked there: relative, inside the
workspace. `read_file` shows text, Markdown, CSV and such as text, a PDF as its text
(`file_text`), and says so of any other binary file; nothing is ever unpacked (a zip stays
its bytes). A long file is read part by part, like `read_source` reads a page: each
part fits the context whole. `delete_file` is risky: under the default policy a human
approves it first.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Annotated, TypeVar
from uuid import UUID

import msgspec
from msgspec import Meta

from application.ports import BlobNotFound
from application.tools.base import AnyTool, Tool, ToolContext
from application.tools.file_text import FileToolError, file_text
from application.tools.parts import MAX_LENGTH, Length, part_end
from application.workspace_files import WorkspaceFiles
from domain.authors import ByAgent, ByUser
from domain.errors import DomainError
from domain.file_paths import InvalidPath
from domain.workspace_files import (
    FileNotFound,
    FileTooLarge,
    PathConflict,
    TooManyFiles,
    WorkspaceFile,
)

MAX_LISTED = 200  # files named by one list_files answer
MAX_WRITE_CHARS = 5_000_000
FilePath = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=4096,
        description="The file's path in the workspace, relative: 'notes.md', 'data/sales.csv'.",
    ),
]


# What the service's errors are called in a kept failure.
_CODES: dict[type[DomainError], str] = {
    InvalidPath: "INVALID_PATH",
    FileNotFound: "FILE_NOT_FOUND",
    PathConflict: "PATH_CONFLICT",
    FileTooLarge: "FILE_TOO_LARGE",
    TooManyFiles: "TOO_MANY_FILES",
}


@contextlib.contextmanager
def _as_tool_errors() -> Iterator[None]:
    try:
        yield
    except FileNotFound as e:
        raise FileToolError("FILE_NOT_FOUND", f"{e}: list_files shows the files there are") from e
    except DomainError as e:
        raise FileToolError(_CODES.get(type(e), e.code), str(e)) from e


A = TypeVar("A", bound=msgspec.Struct)


class FileTool(Tool[A]):
    """A tool on its session's workspace files."""

    def __init__(self, files: WorkspaceFiles | None) -> None:
        self._files = files

    def _workspace(self, context: ToolContext) -> tuple[WorkspaceFiles, UUID]:
        if self._files is None:
            raise FileToolError(
                "FILES_NOT_CONFIGURED",
                "workspace files are not configured in this deployment: no file can be "
                "listed, read, written or deleted",
            )
        if context.workspace_id is None:
            raise FileToolError(
                "NO_WORKSPACE", "this call runs outside a session's workspace, so it has no files"
            )
        return self._files, context.workspace_id


# -- list_files ---------------------------------------------------------------------


class ListFilesArgs(msgspec.Struct, forbid_unknown_fields=True):
    folder: Annotated[
        str, Meta(max_length=4096, description="Only the files under this folder (default: all).")
    ] = ""


class ListFiles(FileTool[ListFilesArgs]):
    name = "list_files"
    description = (
        "List the files of the workspace: the user's uploads and the files written with "
        "write_file, each with its path, media type, size and who last wrote it. "
        "Read one with read_file."
    )
    Args = ListFilesArgs

    async def run(self, args: ListFilesArgs, context: ToolContext) -> str:
        files, workspace_id = self._workspace(context)
        listing = await files.list(workspace_id)
        folder = args.folder.strip().strip("/")
        if folder:
            listing = [f for f in listing if f.path.startswith(folder + "/")]
        where = f"under {folder}/" if folder else "in the workspace"
        if not listing:
            return f"no files {where} yet: write one with write_file, or ask the user to upload one"
        lines = [f"{len(listing)} file{'s' if len(listing) != 1 else ''} {where}:"]
        lines += [f"- {_line(f, context.session_id)}" for f in listing[:MAX_LISTED]]
        if len(listing) > MAX_LISTED:
            lines.append(f"... and {len(listing) - MAX_LISTED} more: list a folder to see them")
        return "\n".join(lines)


def _line(file: WorkspaceFile, session_id: UUID) -> str:
    match file.updated_by:
        case ByUser():
            who = "uploaded by the user"
        case ByAgent(session_id=sid) if sid == session_id:
            who = "written in this session"
        case ByAgent(session_id=sid):
            who = f"written by the agent of session {sid}"
    return f"{file.path} ({file.media_type}, {file.size:,} bytes, {who})"


# -- read_file ----------------------------------------------------------------------


class ReadFileArgs(msgspec.Struct, forbid_unknown_fields=True):
    path: FilePath
    offset: Annotated[
        int,
        Meta(
            ge=0,
            description=(
                "Where to start, in characters of the file's text (0: its start). Each "
                "answer says the offset of the next part."
            ),
        ),
    ] = 0
    length: Length = MAX_LENGTH


class ReadFile(FileTool[ReadFileArgs]):
    name = "read_file"
    description = (
        "Read a file of the workspace as text: text, Markdown, CSV, JSON and the like as "
        f"they are, a PDF as its text. Up to {MAX_LENGTH} characters from an offset; a "
        "longer file is read part by part (each answer names the next offset). Other "
        "binary files (images, archives, spreadsheets) cannot be read as text."
    )
    Args = ReadFileArgs

    async def run(self, args: ReadFileArgs, context: ToolContext) -> str:
        files, workspace_id = self._workspace(context)
        with _as_tool_errors():
            file = await files.stat(workspace_id, args.path)
        try:
            data = await files.bytes_of(file)
        except BlobNotFound:
            raise FileToolError(
                "FILE_CONTENT_MISSING",
                f"the bytes of {file.path} are missing from the blob store: ask the user to "
                "upload it again",
            ) from None
        text = await file_text(file, data)
        end = part_end(len(text), args.offset, args.length, f"the text of {file.path}")
        return f"{_header(file, args.offset, end, len(text))}\n\n{text[args.offset : end]}"


def _header(file: WorkspaceFile, start: int, end: int, total: int) -> str:
    # At most about 550 characters: the part and its header fit the context whole.
    path = file.path if len(file.path) <= 200 else file.path[:197] + "..."
    media_type = file.media_type[:60]
    what = f"{path} ({media_type}, {file.size:,} bytes)"
    if total == 0:
        return f"File {what}: empty"
    if end >= total:
        more = "the end of the file"
    elif len(file.path) <= 150:
        call = msgspec.json.encode({"path": file.path, "offset": end}).decode()
        more = f"next part: read_file {call}"
    else:
        more = f"the next part starts at offset {end}"
    return f"File {what}: characters {start}-{end} of {total} ({more})"


# -- write_file and delete_file -----------------------------------------------------------


class WriteFileArgs(msgspec.Struct, forbid_unknown_fields=True):
    path: FilePath
    content: Annotated[
        str, Meta(max_length=MAX_WRITE_CHARS, description="The file's whole text (UTF-8).")
    ]


class WriteFile(FileTool[WriteFileArgs]):
    name = "write_file"
    description = (
        "Write a text file into the workspace (made, or replaced if the path exists), for "
        "the user to download and for later sessions to read: notes, data as CSV, code. "
        "Folders in the path are made as needed."
    )
    Args = WriteFileArgs

    async def run(self, args: WriteFileArgs, context: ToolContext) -> str:
        files, workspace_id = self._workspace(context)
        data = args.content.encode()
        with _as_tool_errors():
            file = await files.write(
                workspace_id, args.path, data, None, ByAgent(context.session_id)
            )
        made = "a new file" if file.version == 1 else f"version {file.version}"
        return f"wrote {file.path} ({file.media_type}, {file.size:,} bytes, {made})"


class DeleteFileArgs(msgspec.Struct, forbid_unknown_fields=True):
    path: FilePath


class DeleteFile(FileTool[DeleteFileArgs]):
    name = "delete_file"
    description = (
        "Delete a file of the workspace (the user's uploads included). A human approves "
        "each deletion first, under the default policy."
    )
    Args = DeleteFileArgs
    risky = True

    async def run(self, args: DeleteFileArgs, context: ToolContext) -> str:
        files, workspace_id = self._workspace(context)
        with _as_tool_errors():
            file = await files.delete(workspace_id, args.path, ByAgent(context.session_id))
        return f"deleted {file.path} ({file.media_type}, {file.size:,} bytes)"


def file_tools(files: WorkspaceFiles | None) -> list[AnyTool]:
    """The four file tools on `files` (None: each answers that files are not configured)."""
    return [ListFiles(files), ReadFile(files), WriteFile(files), DeleteFile(files)]
