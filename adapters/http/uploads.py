"""Attachments: a file into the blob store, by content hash, for a later chat message.

The answer's `blob_ref` goes into a chat message's `attachments`. Nothing is written
to the session's log here: the message that cites the blob is the event. Uploads
have their own rate limit (adapters/http/limits.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated
from uuid import UUID

import msgspec
from litestar import Controller, post
from litestar.datastructures import UploadFile
from litestar.enums import RequestEncodingType
from litestar.params import Body, Dependency
from litestar.status_codes import HTTP_201_CREATED

from adapters.http.deps import Access, Caller
from adapters.http.errors import ApiError
from application.ports import BlobStore

MAX_UPLOAD = 10 * 1024 * 1024  # bytes of the file itself
MULTIPART_SLACK = 64 * 1024  # room for the form's boundaries and part headers
DEFAULT_TYPE = "application/octet-stream"


@dataclass
class AttachmentForm:
    file: UploadFile


class AttachmentOut(msgspec.Struct):
    blob_ref: str
    filename: str
    size: int
    content_type: str


class UploadController(Controller):
    path = "/api/v1/sessions"
    tags = ["sessions"]

    @post(
        "/{session_id:uuid}/attachments",
        status_code=HTTP_201_CREATED,
        request_max_body_size=MAX_UPLOAD + MULTIPART_SLACK,
    )
    async def upload(
        self,
        session_id: UUID,
        data: Annotated[AttachmentForm, Body(media_type=RequestEncodingType.MULTI_PART)],
        request: Caller,
        access: Access,
        blobs: Annotated[BlobStore, Dependency(skip_validation=True)],  # a Protocol
    ) -> AttachmentOut:
        """Store a file (multipart field `file`, at most 10 MiB); cite its `blob_ref` in chat."""
        await access.session(request.user, session_id, write=True)
        try:
            content = await data.file.read(MAX_UPLOAD + 1)
        finally:
            await data.file.close()
        if len(content) > MAX_UPLOAD:
            raise ApiError(413, f"a file may have at most {MAX_UPLOAD} bytes")
        content_type = data.file.content_type or DEFAULT_TYPE
        blob_ref = await blobs.put(content, content_type=content_type)
        return AttachmentOut(blob_ref, data.file.filename[:255], len(content), content_type)
