"""The OpenAPI document and its docs page.

- Descriptions are the handlers' docstrings; operation ids are short verbs
  (`openapi_ids.py`); security, headers, error bodies and non-JSON answers are filled
  in per operation (`openapi_operations.py`).
- SSE endpoints answer `text/event-stream` whose events are the SSE contract's
  payloads (`schemas.sse`): their JSON Schema goes into the components as `Sse*`.
- The docs page (Swagger UI, at `/api/v1/docs`, `/schema` and `/schema/swagger`) loads
  its assets from the app: they ship in the `swagger-ui-py` package (Swagger UI 5,
  which reads OpenAPI 3.1), served under `/schema/assets`. Nothing comes from a CDN.
- `tokendance openapi` writes the document to `schemas/openapi.json` without a server
  (`openapi_document.py`); the web client generates its types from that file.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path

import msgspec
from litestar import MediaType, Request, get
from litestar.datastructures import State
from litestar.handlers import HTTPRouteHandler
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
)
from litestar.router import Router
from litestar.static_files import create_static_files_router

from adapters.http.contract.openapi_ids import operation_id
from adapters.http.contract.openapi_operations import ERROR_BODY, SECURITY_SCHEMES, TOKEN, document
from schemas.api import Error
from schemas.sse import SsePayload

DOCS = "/schema"
DOCS_PAGE = "/api/v1/docs"  # where seed 001 has it
ASSETS = f"{DOCS}/assets"
SSE_ROOT = "SsePayload"
DESCRIPTION = (
    "TokenDance's HTTP API: sessions, chat over Server-Sent Events, artifacts, workspaces. "
    "Errors answer `{detail, error_code, timestamp}`. SSE payloads are the `Sse*` schemas. "
    "The push channel, `WS /api/v1/ws`, is not here (OpenAPI has no WebSockets): see docs/api.md."
)


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


def _swagger() -> SwaggerRenderPlugin:
    favicon = f"<link rel='icon' type='image/png' href='{ASSETS}/favicon-32x32.png'>"
    return SwaggerRenderPlugin(
        js_url=f"{ASSETS}/swagger-ui-bundle.js",
        css_url=f"{ASSETS}/swagger-ui.css",
        standalone_preset_js_url=f"{ASSETS}/swagger-ui-standalone-preset.js",
        path=["/", "/swagger"],
        favicon=favicon,
    )


SWAGGER = _swagger()


def openapi_config() -> OpenAPIConfig:
    return OpenAPIConfig(
        title="TokenDance",
        version="1.0.0",
        description=DESCRIPTION,
        path=DOCS,
        render_plugins=[SWAGGER],
        use_handler_docstrings=True,
        operation_id_creator=operation_id,
        components=Components(security_schemes=dict(SECURITY_SCHEMES)),
        security=list(TOKEN),
    )


@get(DOCS_PAGE, include_in_schema=False, media_type=MediaType.HTML, sync_to_thread=False)
def docs_page(request: Request[object, object, State]) -> bytes:
    """Swagger UI at the seed's address, the same page as `/schema`."""
    return SWAGGER.render(request, request.app.openapi_schema.to_schema())


def docs_routes() -> list[Router | HTTPRouteHandler]:
    """The docs page and Swagger UI's files, from the installed package."""
    static = Path(str(files("swagger_ui") / "static"))
    assets = create_static_files_router(ASSETS, [static], include_in_schema=False, name="docs")
    return [assets, docs_page]


def complete(openapi: OpenAPI) -> None:
    """Add the SSE contract's and the error body's schemas, and complete each operation."""
    schemas = openapi.components.schemas
    schemas.update(_sse_components())
    _, parts = msgspec.json.schema_components((Error,))
    schemas[ERROR_BODY] = RawSchema(raw=parts["Error"])
    for path, item in (openapi.paths or {}).items():
        for method in ("get", "put", "post", "delete", "patch"):
            operation = getattr(item, method)
            if isinstance(operation, Operation):
                operation.summary = _summary(operation.operation_id or "")
                document(path, method, operation)


def _summary(op_id: str) -> str:
    """`createSession` -> `Create session`."""
    words = "".join(f" {c.lower()}" if c.isupper() else c for c in op_id)
    return words[:1].upper() + words[1:]


def _sse_components() -> dict[str, Schema]:
    template = "#/components/schemas/Sse{name}"
    (root,), components = msgspec.json.schema_components((SsePayload,), ref_template=template)
    found: dict[str, Schema] = {SSE_ROOT: RawSchema(raw=root)}
    for name, schema in components.items():
        found[f"Sse{name}"] = RawSchema(raw=schema)
    return found
