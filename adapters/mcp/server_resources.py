"""Sessions' artifacts (reports, decks, files) as MCP resources, at their latest version.

Listed for every workspace the caller sees, as `GET /artifacts` lists them (the same
page cursors); read through the same tenant check as a download: another tenant's
artifact reads exactly like one that does not exist. Text comes back as text, anything
else (a deck, a PDF) as base64 bytes with its media type.
"""

from __future__ import annotations

import base64

from mcp_types import (
    BlobResourceContents,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    TextResourceContents,
)

from adapters.http.reads.artifact_urls import TEXT_TYPES, bare_type
from adapters.http.routes.artifacts import artifact_page
from adapters.mcp.server_call import Call
from adapters.mcp.server_uris import ARTIFACT_TEMPLATE, artifact_uri, parse_artifact_uri
from domain.errors import NotFound
from projections.artifacts import ArtifactsView

PAGE = 100
TEMPLATES = ListResourceTemplatesResult(
    resource_templates=[
        ResourceTemplate(
            name="artifact",
            title="A session's artifact",
            uri_template=ARTIFACT_TEMPLATE,
            description="A report, deck or file a session made, at its latest version: text "
            "as text, anything else as bytes. list_artifacts gives a session's.",
        )
    ]
)


async def list_resources(call: Call, cursor: str | None) -> ListResourcesResult:
    api = call.api
    mine = await api.bridge(api.workspaces.workspaces_of, call.user)
    page = await artifact_page(api, [w.workspace_id for w in mine], None, None, cursor, PAGE)
    resources = [
        Resource(
            uri=artifact_uri(a.session_id, a.id),
            name=a.name,
            description=f"{a.type} of session {a.session_id}",
            mime_type=a.media_type,
            size=a.size,
        )
        for a in page.items
    ]
    return ListResourcesResult(resources=resources, next_cursor=page.next_cursor)


async def read_resource(call: Call, uri: str) -> ReadResourceResult:
    api = call.api
    ids = parse_artifact_uri(uri)
    if ids is None:
        raise NotFound(f"no resource {uri}: artifacts are {ARTIFACT_TEMPLATE}")
    session_id, artifact_id = ids
    await api.access.session_workspace(call.user, session_id)
    await api.waiter.caught_up(ArtifactsView.name)  # one just made is found
    row = await api.bridge(api.artifacts.view.get, artifact_id)
    if row is None or row.session_id != session_id:
        raise NotFound(f"artifact {artifact_id} not found in session {session_id}")
    latest = await api.artifacts.version(row, None)
    data = await api.blobs.get(latest.blob_ref)
    if bare_type(latest.media_type).startswith(TEXT_TYPES):
        text = TextResourceContents(
            uri=uri, mime_type=latest.media_type, text=data.decode(errors="replace")
        )
        return ReadResourceResult(contents=[text])
    blob = base64.b64encode(data).decode()
    return ReadResourceResult(
        contents=[BlobResourceContents(uri=uri, mime_type=latest.media_type, blob=blob)]
    )
