"""Workspace files over HTTP: list, upload, download, delete.

Members of a workspace list and download its files; its writers (owner, admin,
member) upload and delete. Another tenant's workspace, and any file id that is not
one of the workspace's, answer 404 as if unknown. The list comes from the workspace
files read model (after it has caught up with the accounts' log, briefly); a file by
id comes from the workspace's folder itself, so a file just uploaded downloads at once.

An upload is a multipart form: the file in the field `file`, and optionally the
`path` to keep it at (default: the file's own name). At most
`TOKENDANCE_MAX_UPLOAD_BYTES` (413 over it), never empty (400); a path outside the
workspace, or with NUL or other control characters, is a 400; nothing is stored for
any of them. Uploads count towards the per-user upload rate limit
(adapters/http/middleware/limits.py). Files are bytes: nothing is unpacked, parsed or run here.

A download streams the bytes through the API as an attachment (with `nosniff`, so a
browser never renders an uploaded page). With `?redirect=true` and a blob store that
presigns URLs (S3), it answers 307 to a short-lived presigned URL instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Protocol, runtime_checkable
from uuid import UUID

from litestar import Controller, Request, Response, Router, delete, get, post
from litestar.datastructures import State, UploadFile
from litestar.enums import MediaType, RequestEncodingType
from litestar.exceptions.http_exceptions import RequestEntityTooLarge
from litestar.params import Body, FromPath, FromQuery, QueryParameter
from litestar.response import Redirect
from litestar.status_codes import HTTP_201_CREATED, HTTP_204_NO_CONTENT

from adapters.http.deps import ApiDep, Caller
from adapters.http.errors import ApiError, error_response
from adapters.http.reads.cursors import page
from adapters.http.reads.downloads import content_disposition, download
from domain.authors import Author, ByAgent, ByUser
from domain.workspace_files import WorkspaceFile
from projections.workspace_files import FileRow
from schemas.workspace_files import FileAuthor, WorkspaceFileOut, WorkspaceFilePage

MULTIPART_SLACK = 64 * 1024  # room for the form's boundaries, part headers and `path`


@dataclass
class FileForm:
    file: UploadFile
    path: str | None = None


@runtime_checkable
class DownloadUrls(Protocol):
    """A blob store that hands out presigned download URLs (adapters/blobs/s3.py)."""

    async def download_url(self, sha256: str, *, media_type: str, disposition: str) -> str: ...


class WorkspaceFilesController(Controller):
    path = "/api/v1/workspaces/{workspace_id:uuid}/files"
    tags = ["files"]

    @get("/")
    async def list_files(
        self,
        workspace_id: FromPath[UUID],
        request: Caller,
        api: ApiDep,
        limit: Annotated[int, QueryParameter(ge=1, le=1000)] = 200,
        cursor: Annotated[str | None, QueryParameter(max_length=2000)] = None,
    ) -> WorkspaceFilePage:
        """The workspace's files, by path, with who made and last changed each."""
        after = api.cursors.read("files", cursor)
        await api.access.workspace(request.user, workspace_id)
        rows = await api.file_listing.files(workspace_id)
        taken, last = page(rows, lambda r: (r.path,), after, limit)
        next_cursor = None if last is None else api.cursors.issue("files", last)
        return WorkspaceFilePage([_row_out(row) for row in taken], next_cursor)

    @post("/", status_code=HTTP_201_CREATED)
    async def upload(
        self,
        workspace_id: FromPath[UUID],
        data: Annotated[FileForm, Body(media_type=RequestEncodingType.MULTI_PART)],
        request: Caller,
        api: ApiDep,
    ) -> WorkspaceFileOut:
        """Upload a file (multipart field `file`; `path` to keep it elsewhere than its name).
        A file already at that path gets a new version."""
        files = api.workspace_files
        try:
            await api.access.workspace(request.user, workspace_id, write=True)
            content = await data.file.read(files.max_bytes + 1)
        finally:
            await data.file.close()
        if len(content) > files.max_bytes:
            raise _too_large(files.max_bytes)
        if not content:
            raise ApiError(400, "the file is empty: upload a file with something in it")
        path = data.path if data.path is not None and data.path.strip() else data.file.filename
        by = ByUser(request.user.user_id)
        file = await files.write(workspace_id, path, content, data.file.content_type, by)
        return _file_out(workspace_id, file)

    @get("/{file_id:uuid}", media_type="application/octet-stream")
    async def download(
        self,
        workspace_id: FromPath[UUID],
        file_id: FromPath[UUID],
        request: Caller,
        api: ApiDep,
        redirect: FromQuery[bool] = False,
    ) -> Response[bytes] | Redirect:
        """The file's bytes, with its media type and name (`redirect=true`: a 307 to a
        presigned URL, where the blob store has them)."""
        files = api.workspace_files
        await api.access.workspace(request.user, workspace_id)
        file = await files.file(workspace_id, file_id)
        disposition = content_disposition(file.name)
        if redirect and isinstance(files.blobs, DownloadUrls):
            url = await files.blobs.download_url(
                file.blob_ref, media_type=file.media_type, disposition=disposition
            )
            return Redirect(url, status_code=307, media_type=MediaType.TEXT)
        data = await files.bytes_of(file)
        return download(data, file.media_type, disposition, {"Content-Security-Policy": "sandbox"})

    @delete("/{file_id:uuid}", status_code=HTTP_204_NO_CONTENT)
    async def delete_file(
        self,
        workspace_id: FromPath[UUID],
        file_id: FromPath[UUID],
        request: Caller,
        api: ApiDep,
    ) -> None:
        """Delete the file (its history stays in the workspace's log)."""
        await api.access.workspace(request.user, workspace_id, write=True)
        await api.workspace_files.delete_id(workspace_id, file_id, ByUser(request.user.user_id))


def workspace_files_router(limit: int) -> Router:
    """The files API, with its body limit (`limit`, the upload limit, and the form around it)."""

    def too_large(_: Request[object, object, State], __: Exception) -> Response[dict[str, str]]:
        error = _too_large(limit)
        return error_response(413, str(error.detail), error.code)

    return Router(
        "/",
        route_handlers=[WorkspaceFilesController],
        request_max_body_size=limit + MULTIPART_SLACK,
        exception_handlers={RequestEntityTooLarge: too_large},
    )


def _too_large(limit: int) -> ApiError:
    return ApiError(
        413,
        f"a workspace file may have at most {limit:,} bytes (TOKENDANCE_MAX_UPLOAD_BYTES)",
        "PAYLOAD_TOO_LARGE",
    )


def _author(by: Author) -> FileAuthor:
    match by:
        case ByUser(user_id=user_id):
            return FileAuthor(kind="user", id=user_id)
        case ByAgent(session_id=session_id):
            return FileAuthor(kind="agent", id=session_id)


def _file_out(workspace_id: UUID, file: WorkspaceFile) -> WorkspaceFileOut:
    return WorkspaceFileOut(
        id=file.file_id, workspace_id=workspace_id, path=file.path, name=file.name,
        size=file.size, sha256=file.blob_ref, type=file.media_type, version=file.version,
        created_at=file.created_at, updated_at=file.updated_at,
        created_by=_author(file.created_by), updated_by=_author(file.updated_by),
        url=file_url(workspace_id, file.file_id),
    )  # fmt: skip


def _row_out(row: FileRow) -> WorkspaceFileOut:
    return WorkspaceFileOut(
        id=row.file_id, workspace_id=row.workspace_id, path=row.path,
        name=row.path.rsplit("/", 1)[-1], size=row.size, sha256=row.blob_ref,
        type=row.media_type, version=row.version, created_at=row.created_at,
        updated_at=row.updated_at,
        created_by=FileAuthor(kind=row.created_by_kind, id=row.created_by),
        updated_by=FileAuthor(kind=row.updated_by_kind, id=row.updated_by),
        url=file_url(row.workspace_id, row.file_id),
    )  # fmt: skip


def file_url(workspace_id: UUID, file_id: UUID) -> str:
    return f"/api/v1/workspaces/{workspace_id}/files/{file_id}"
