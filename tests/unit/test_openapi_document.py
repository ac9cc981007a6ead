"""The OpenAPI document, built without a server: what a code generator relies on."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from adapters.http.contract.openapi_document import OPENAPI_FILE, openapi_document, openapi_text

Doc = dict[str, object]
Op = dict[str, object]
PUBLIC_OPS = {"getHealth", "getReadiness", "getMetrics", "login", "register", "refreshToken"}
TOKEN = [{"BearerToken": []}, {"ApiKey": []}]
ERROR_REF = {"$ref": "#/components/schemas/ErrorBody"}


@pytest.fixture(scope="module")
def doc() -> Doc:
    built = json.loads(json.dumps(openapi_document().to_schema()))
    assert isinstance(built, dict)
    return built


def operations(doc: Doc) -> Iterator[tuple[str, str, Op]]:
    paths = doc["paths"]
    assert isinstance(paths, dict)
    for path, item in paths.items():
        for method, operation in item.items():
            yield path, method, operation


def by_id(doc: Doc) -> dict[str, Op]:
    return {str(op["operationId"]): op for _, _, op in operations(doc)}


def test_the_committed_document_is_current() -> None:
    assert OPENAPI_FILE.read_text() == openapi_text(), "run `tokendance openapi`"


def test_operation_ids_are_unique_short_camel_case_verbs(doc: Doc) -> None:
    ids = [str(op["operationId"]) for _, _, op in operations(doc)]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
    assert [i for i in ids if not re.fullmatch(r"[a-z][A-Za-z]+", i)] == []
    named = {"createSession", "listSessions", "getSession", "sendMessage", "streamSession"}
    named |= {"listArtifacts", "listSessionArtifacts", "downloadArtifact", "executeTool", "login"}
    assert named <= set(ids)


def test_every_operation_has_a_description_and_a_summary(doc: Doc) -> None:
    for path, method, op in operations(doc):
        assert op.get("description"), (method, path)
        assert op["summary"] != op["operationId"], (method, path)
    assert by_id(doc)["createSession"]["summary"] == "Create session"


def test_a_token_is_asked_only_where_one_is_needed(doc: Doc) -> None:
    components = doc["components"]
    assert isinstance(components, dict)
    schemes = components["securitySchemes"]
    assert schemes["BearerToken"] == {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"} | {
        "description": schemes["BearerToken"]["description"]
    }
    assert schemes["ApiKey"]["bearerFormat"] == "tdk_..."
    assert (schemes["AccessTokenQuery"]["in"], schemes["AccessTokenQuery"]["name"]) == (
        "query",
        "access_token",
    )
    for path, method, op in operations(doc):
        if op["operationId"] in PUBLIC_OPS:
            assert op["security"] == [], (method, path)
        elif op["operationId"] == "streamSession":
            assert op["security"] == [*TOKEN, {"AccessTokenQuery": []}]
        else:
            assert op["security"] == TOKEN, (method, path)


def parameters(op: Op) -> dict[tuple[str, str], dict[str, object]]:
    found = op.get("parameters") or []
    assert isinstance(found, list)
    return {(p["in"], p["name"]): p for p in found}


def test_the_headers_the_routes_use_are_described(doc: Doc) -> None:
    ops = by_id(doc)
    for covered in ("sendMessage", "createSession", "executeTool", "uploadFile"):
        assert ("header", "Idempotency-Key") in parameters(ops[covered]), covered
        ok = next(r for s, r in ops[covered]["responses"].items() if s.startswith("2"))
        assert "Idempotent-Replayed" in ok["headers"], covered
    for not_covered in ("login", "register", "uploadAttachment", "getSession", "updateSession"):
        assert ("header", "Idempotency-Key") not in parameters(ops[not_covered]), not_covered
    assert ("header", "Last-Event-ID") in parameters(ops["streamSession"])
    for path, method, op in operations(doc):
        responses = op["responses"]
        for status in ("429", "503"):
            if status in responses and op["operationId"] != "getReadiness":
                assert "Retry-After" in responses[status]["headers"], (method, path, status)
    assert "Content-Disposition" in ops["downloadArtifact"]["responses"]["200"]["headers"]
    assert "Location" in ops["downloadFile"]["responses"]["307"]["headers"]


def test_binary_and_text_answers_are_typed_as_such(doc: Doc) -> None:
    ops = by_id(doc)
    binary = {"type": "string", "format": "binary"}
    for op_id, media_type in (
        ("downloadArtifact", "application/octet-stream"),
        ("downloadFile", "application/octet-stream"),
        ("getSlideThumbnail", "image/png"),
    ):
        assert ops[op_id]["responses"]["200"]["content"] == {media_type: {"schema": binary}}
    assert ops["getMetrics"]["responses"]["200"]["content"] == {
        "text/plain": {"schema": {"type": "string"}}
    }
    for sse in ("sendMessage", "streamSession", "regenerateSlide"):
        assert list(ops[sse]["responses"]["200"]["content"]) == ["text/event-stream"], sse


def test_each_status_a_route_answers_is_listed_with_its_body(doc: Doc) -> None:
    ops = by_id(doc)
    execute = ops["executeTool"]["responses"]
    assert "201" not in execute
    for status in ("200", "202"):
        body = execute[status]["content"]["application/json"]["schema"]
        assert body == {"$ref": "#/components/schemas/ToolExecuteOut"}, status
    assert {"201", "202"} <= ops["addMember"]["responses"].keys()
    assert {"401", "403", "404", "409", "413", "422", "429"} <= ops["sendMessage"][
        "responses"
    ].keys()
    assert "401" not in ops["register"]["responses"]
    assert "401" in ops["login"]["responses"]
    assert "413" not in ops["getSession"]["responses"]
    assert "410" in ops["acceptInvitation"]["responses"]
    for path, method, op in operations(doc):
        for status, response in op["responses"].items():
            if status >= "400" and op["operationId"] != "getReadiness":
                assert response["content"] == {"application/json": {"schema": ERROR_REF}}, (
                    method,
                    path,
                    status,
                )
