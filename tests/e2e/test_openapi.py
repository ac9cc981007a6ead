"""The OpenAPI document the server serves and its docs page: SSE contract, no CDN.

What the document says of each operation is checked on the document built without a
server (tests/unit/test_openapi_document.py): here, that the server serves that one.
"""

from __future__ import annotations

import json
import re
from urllib.parse import urlsplit

import pytest

from adapters.http.contract.openapi_document import openapi_document
from schemas.export import SSE_SCHEMA
from tests.e2e.conftest import StartServer

pytestmark = [pytest.mark.e2e]

SSE_PATHS = {
    ("/api/v1/chat/{session_id}/message", "post"),
    ("/api/v1/sessions/{session_id}/stream", "get"),
}


def test_the_docs_page_loads_every_asset_from_the_app(start_server: StartServer) -> None:
    server = start_server(None)
    http = server.client()
    for page in ("/api/v1/docs", "/schema", "/schema/swagger"):
        html = http.get(page)
        assert html.status_code == 200, page
        assets = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']""", html.text)
        assert len(assets) >= 3, assets
        for asset in assets:
            assert not urlsplit(asset).netloc, f"{page} loads {asset} from another host"
            assert http.get(asset).status_code == 200, asset


def test_the_server_serves_the_document_with_the_sse_contract(start_server: StartServer) -> None:
    server = start_server(None)
    doc = server.client().get("/schema/openapi.json").json()
    schemas = doc["components"]["schemas"]
    for path, method in SSE_PATHS:
        ok = doc["paths"][path][method]["responses"]["200"]["content"]
        assert list(ok) == ["text/event-stream"]
        assert ok["text/event-stream"]["schema"] == {"$ref": "#/components/schemas/SsePayload"}
    exported = json.loads(SSE_SCHEMA.read_text())
    union = json.dumps(schemas["SsePayload"]).replace("#/components/schemas/Sse", "#/$defs/")
    assert json.loads(union)["anyOf"] == exported["anyOf"]
    assert {f"Sse{name}" for name in exported["$defs"]} <= schemas.keys()

    assert set(schemas["ErrorBody"]["required"]) == {"detail", "error_code", "timestamp"}
    assert doc == json.loads(json.dumps(openapi_document().to_schema()))
