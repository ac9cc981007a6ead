"""Workspace files a user message attaches: read once, when the message is sent, into
the text the conversation carries (the event holds it, so every later request and a
replay see the same). Text, Markdown, CSV, JSON and PDF are read; other files are
refused with a reason, before anything is written."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

from application.ports import BlobStore
from application.tools.file_text import FileToolError, file_text
from application.workspace_files import WorkspaceFiles
from domain.errors import InvalidCommand
from domain.policies import SUMMARY_LIMIT, summarize_output
from domain.values import AttachedFile

MAX_ATTACHMENTS = 10


class UnsupportedAttachment(InvalidCommand):
    """An attached file the agent cannot read as text (an image, an archive, a broken PDF)."""

    code = "UNSUPPORTED_ATTACHMENT"
    http_status = 400


async def attach(
    files: WorkspaceFiles, blobs: BlobStore, workspace_id: UUID, file_ids: Sequence[UUID]
) -> list[AttachedFile]:
    """The files by id (each once, in order) with their text; `FileNotFound` for an id
    that is not a file of the workspace, `UnsupportedAttachment` for one with no text."""
    if len(file_ids) > MAX_ATTACHMENTS:
        raise UnsupportedAttachment(f"a message attaches at most {MAX_ATTACHMENTS} files")
    attached: list[AttachedFile] = []
    for file_id in dict.fromkeys(file_ids):
        file = await files.file(workspace_id, file_id)
        try:
            text = await file_text(file, await files.bytes_of(file))
        except FileToolError as e:
            raise UnsupportedAttachment(
                f"{file.path} cannot be attached: {e} (text, Markdown, CSV, JSON and PDF can)"
            ) from None
        whole = None  # a long text is kept whole in the blob store
        if len(text) > SUMMARY_LIMIT:
            whole = await blobs.put(text.encode(), content_type="text/plain; charset=utf-8")
        attached.append(
            AttachedFile(
                file.file_id,
                file.path,
                file.media_type,
                file.size,
                summarize_output(text, whole),
                whole,
            )
        )
    return attached
