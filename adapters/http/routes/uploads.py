"""Attachments: a file into the blob store, by content hash, for a later chat message.

The answer's `blob_ref` goes into a chat message's `attachments`. Nothing is written
to the session's log here: the message that cites the blob is the event. Which blobs
were uploaded to which session is kept in a table (`SessionUploads`), so a message can
cite only its own session's uploads. Uploads have their own rate limit
(adapters/http/middleware/limits.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated
from uuid import UUID

import msgspec
from litestar import Controller, post
from litestar.datastructures import UploadFile
from litestar.enums import RequestEncodingType
from litestar.params import Body, FromPath
from litestar.status_codes import HTTP_201_CREATED

from adapters.http.deps import ApiDep, Caller
from adapters.http.errors import ApiError
from adapters.postgres.session_uploads import SessionUploads
from application.bridge import SyncBridge

MAX_UPLOAD = 10 * 1024 * 1024  # bytes of the file itself
MULTIPART_SLACK = 64 * 1024  # room for the form's boundaries and part headers
TOO_LARGE = f"a file may have at most {MAX_UPLOAD:,} bytes (10 MiB)"
DEFAULT_TYPE = "application/octet-stream"


@dataclass
class AttachmentForm:
    file: UploadFile


class AttachmentOut(msgspec.Struct):
    blob_ref: str
    filename: str
    size: int
    content_type: str


async def check_attachments(
    uploads: SessionUploads, bridge: SyncBridge, session_id: UUID, blob_refs: Sequence[str]
) -> None:
    """404 unless every ref is one of the session's uploads."""
    if not blob_refs:
        return
    missing = await bridge(uploads.missing, session_id, blob_refs)
    if missing:
        raise ApiError(
            404,
            f"attachment {missing[0]!r} is not a file uploaded to this session "
            "(POST /api/v1/sessions/{id}/attachments gives a blob_ref)",
            "ATTACHMENT_NOT_FOUND",
        )


class UploadController(Controller):
    path = "/api/v1/sessions"
    tags = ["sessions"]

    @post(
        "/{session_id:uuid}/attachments",
        status_code=HTTP_201_CREATED,
        request_max_body_size=MAX_UPLOAD + MULTIPART_SLACK,
        opt={"too_large": TOO_LARGE},  # the 413 over the body limit (adapters/http/errors.py)
    )
    async def upload(
        self,
        session_id: FromPath[UUID],
        data: Annotated[AttachmentForm, Body(media_type=RequestEncodingType.MULTI_PART)],
        request: Caller,
        api: ApiDep,
    ) -> AttachmentOut:
        """Store a file (multipart field `file`, at most 10 MiB); cite its `blob_ref` in chat."""
        await api.access.session_workspace(request.user, session_id, write=True)
        try:
            content = await data.file.read(MAX_UPLOAD + 1)
        finally:
            await data.file.close()
        if len(content) > MAX_UPLOAD:
            raise ApiError(413, TOO_LARGE)
        content_type = data.file.content_type or DEFAULT_TYPE
        blob_ref = await api.blobs.put(content, content_type=content_type)
        await api.bridge(api.uploads.add, session_id, blob_ref)
        return AttachmentOut(blob_ref, data.file.filename[:255], len(content), content_type)
