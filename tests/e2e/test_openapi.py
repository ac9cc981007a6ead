"""The OpenAPI document and its docs page: SSE contract, error bodies, no CDN."""

from __future__ import annotations

import json
import re
from urllib.parse import urlsplit

import pytest

from schemas.export import SSE_SCHEMA
from tests.e2e.conftest import StartServer

pytestmark = [pytest.mark.e2e]

SSE_PATHS = {
    ("/api/v1/chat/{session_id}/message", "post"),
    ("/api/v1/sessions/{session_id}/stream", "get"),
}
ERROR_STATUSES = {"400", "401", "403", "404", "409", "413", "422", "429"}


def test_the_docs_page_loads_every_asset_from_the_app(start_server: StartServer) -> None:
    server = start_server(None)
    http = server.client()
    for page in ("/schema", "/schema/swagger"):
        html = http.get(page)
        assert html.status_code == 200, page
        assets = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']""", html.text)
        assert len(assets) >= 3, assets
        for asset in assets:
            assert not urlsplit(asset).netloc, f"{page} loads {asset} from another host"
            assert http.get(asset).status_code == 200, asset


def test_openapi_documents_the_sse_contract_and_the_error_body(start_server: StartServer) -> None:
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

    error = schemas["ErrorBody"]
    assert set(error["required"]) == {"detail", "error_code", "timestamp"}
    for path, item in doc["paths"].items():
        if not path.startswith("/api/"):
            continue
        for method, operation in item.items():
            responses = operation["responses"]
            assert responses.keys() >= ERROR_STATUSES, (path, method)
            for status in ERROR_STATUSES:
                body = responses[status]["content"]["application/json"]["schema"]
                assert body == {"$ref": "#/components/schemas/ErrorBody"}, (path, method, status)
