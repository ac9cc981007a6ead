"""The OpenAPI document and its docs page.

- SSE endpoints answer `text/event-stream` whose events are the SSE contract's
  payloads (`schemas.sse`): their JSON Schema goes into the components as `Sse*`.
- Every API operation documents the error body `{detail, error_code, timestamp}` for
  the statuses a client can meet.
- The docs page (Swagger UI, at `/schema` and `/schema/swagger`) loads its assets from
  the app: they ship in the `swagger-ui-py` package (Swagger UI 5, which reads
  OpenAPI 3.1), served under `/schema/assets`. Nothing comes from a CDN.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

import msgspec
from litestar.openapi import OpenAPIConfig
from litestar.openapi.plugins import SwaggerRenderPlugin
from litestar.openapi.spec import (
    Components,
    OpenAPI,
    OpenAPIMediaType,
    OpenAPIResponse,
    Operation,
    Reference,
    Schema,
    SecurityScheme,
)
from litestar.router import Router
from litestar.static_files import create_static_files_router

from schemas.api import Error
from schemas.sse import SsePayload

DOCS = "/schema"
ASSETS = f"{DOCS}/assets"
SSE_ROOT = "SsePayload"
ERROR_BODY = "ErrorBody"
ERRORS = {
    400: "Bad input (a body, parameter or header that does not validate)",
    401: "No valid bearer access token",
    403: "The caller's role does not allow this",
    404: "Not found (another tenant's things answer 404 too)",
    409: "Conflicts with the session's state (a concurrent change, a closed session, ...)",
    413: "The body or a message is too large",
    422: "Well-formed but not processable",
    429: "A rate limit was met (see `Retry-After`)",
}


@dataclass
class RawSchema(Schema):
    """A schema given as plain JSON (msgspec's), written out as it is."""

    raw: dict[str, object] | None = None

    def to_schema(self) -> dict[str, object]:
        return dict(self.raw or {})


@dataclass
class SseOperation(Operation):
    """An operation that answers Server-Sent Events of the SSE contract."""

    def __post_init__(self) -> None:
        content = OpenAPIMediaType(schema=Reference(f"#/components/schemas/{SSE_ROOT}"))
        description = (
            "Server-Sent Events: `event:` is the payload's `type`, `data:` the JSON payload, "
            "`id:` the session version of a stored event (none on live chunks)."
        )
        self.responses = {
            **(self.responses or {}),
            "200": OpenAPIResponse(description, content={"text/event-stream": content}),
        }


def openapi_config() -> OpenAPIConfig:
    favicon = f"<link rel='icon' type='image/png' href='{ASSETS}/favicon-32x32.png'>"
    swagger = SwaggerRenderPlugin(
        js_url=f"{ASSETS}/swagger-ui-bundle.js",
        css_url=f"{ASSETS}/swagger-ui.css",
        standalone_preset_js_url=f"{ASSETS}/swagger-ui-standalone-preset.js",
        path=["/", "/swagger"],
        favicon=favicon,
    )
    return OpenAPIConfig(
        title="TokenDance",
        version="1.0.0",
        path=DOCS,
        render_plugins=[swagger],
        components=Components(
            security_schemes={"BearerToken": SecurityScheme(type="http", scheme="bearer")}
        ),
        security=[{"BearerToken": []}],
    )


def docs_assets() -> Router:
    """Swagger UI's files, from the installed package."""
    static = Path(str(files("swagger_ui") / "static"))
    return create_static_files_router(ASSETS, [static], include_in_schema=False, name="docs")


def complete(openapi: OpenAPI) -> None:
    """Add the SSE contract's schemas and the documented error responses."""
    schemas = openapi.components.schemas
    schemas.update(_sse_components())
    _, parts = msgspec.json.schema_components((Error,))
    schemas[ERROR_BODY] = RawSchema(raw=parts["Error"])
    error_ref = Reference(f"#/components/schemas/{ERROR_BODY}")
    for path, item in (openapi.paths or {}).items():
        if not path.startswith("/api/"):
            continue
        for operation in (item.get, item.post, item.put, item.patch, item.delete):
            if operation is None:
                continue
            responses = dict(operation.responses or {})
            for status, description in ERRORS.items():
                body = {"application/json": OpenAPIMediaType(schema=error_ref)}
                responses[str(status)] = OpenAPIResponse(description, content=body)
            operation.responses = responses


def _sse_components() -> dict[str, Schema]:
    template = "#/components/schemas/Sse{name}"
    (root,), components = msgspec.json.schema_components((SsePayload,), ref_template=template)
    found: dict[str, Schema] = {SSE_ROOT: RawSchema(raw=root)}
    for name, schema in components.items():
        found[f"Sse{name}"] = RawSchema(raw=schema)
    return found
