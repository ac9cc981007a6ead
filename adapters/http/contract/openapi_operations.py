"""What each operation of the OpenAPI document says beyond its handler's signature.

- Security: none on the public routes (`auth.PUBLIC`), a bearer access token or an
  API key elsewhere, and on SSE streams also the `access_token` query parameter.
- Headers: `Idempotency-Key` where the middleware honours it (`idempotency.COVERED`),
  `Last-Event-ID` on streams; `Retry-After` on 429 and 503 (and on a 409 for a key
  still in progress), `Idempotent-Replayed`, `Content-Disposition`, `Location`.
- The error body for the statuses each route can answer (`error_statuses`).
- Binary and text answers typed as such (`BODIES`).
"""

from __future__ import annotations

import re

from litestar.openapi.spec import (
    OpenAPIFormat,
    OpenAPIHeader,
    OpenAPIMediaType,
    OpenAPIResponse,
    OpenAPIType,
    Operation,
    Parameter,
    Reference,
    Schema,
    SecurityRequirement,
    SecurityScheme,
)

from adapters.http.middleware.auth import PUBLIC
from adapters.http.middleware.idempotency import COVERED
from adapters.http.middleware.limits import EXEMPT

ERROR_BODY = "ErrorBody"
ERRORS = {
    400: "Bad input (a body, parameter or header that does not validate)",
    401: "No valid access token or API key (or, logging in, wrong credentials)",
    403: "The caller's role does not allow this",
    404: "Not found (another tenant's things answer 404 too)",
    409: "Conflicts with the current state (a concurrent change, a closed session, "
    "an `Idempotency-Key` still in progress, ...)",
    410: "The invitation was used, revoked or has expired",
    413: "The body or a file is too large (the detail names the limit)",
    422: "Understood but cannot be done (an `Idempotency-Key` reused for another request, "
    "a PDF that cannot be read, a deck page out of range)",
    429: "A rate limit was met: retry after `Retry-After` seconds",
    501: "Not available on this server (LibreOffice is not installed)",
    502: "LibreOffice could not convert the deck",
    503: "The database is unavailable: retry after `Retry-After` seconds",
}
# Statuses beyond the rule in `error_statuses`, by operation id.
EXTRA_ERRORS = {
    "acceptInvitation": {410},
    "previewArtifact": {422, 501, 502},
    "regenerateSlide": {422},
    "downloadArtifact": {501, 502},
    "getSlideThumbnail": {501, 502},
}
WRONG_CREDENTIALS = {"login", "refreshToken", "logout"}  # public, or 401 for a bad token
BINARY = Schema(type=OpenAPIType.STRING, format=OpenAPIFormat.BINARY)
# The 200 bodies that are not JSON: (media type, schema, description), by operation id.
BODIES = {
    "downloadArtifact": (
        "application/octet-stream",
        BINARY,
        "The artifact's bytes; `Content-Type` is its own media type (`application/pdf` "
        "with `format=pdf`)",
    ),
    "downloadFile": (
        "application/octet-stream",
        BINARY,
        "The file's bytes; `Content-Type` is its own media type",
    ),
    "getSlideThumbnail": ("image/png", BINARY, "The slide as a PNG"),
    "getMetrics": (
        "text/plain",
        Schema(type=OpenAPIType.STRING),
        "Prometheus metrics, text exposition format 0.0.4",
    ),
}
# Other media types a 200 may come in, by operation id (the client asks with `Accept`).
ALTERNATIVES = {"getUsage": {"text/csv": OpenAPIMediaType(schema=Schema(type=OpenAPIType.STRING))}}
SECURITY_SCHEMES = {
    "BearerToken": SecurityScheme(
        type="http",
        scheme="bearer",
        bearer_format="JWT",
        description="An access token from `POST /api/v1/auth/login` (or register, refresh).",
    ),
    "ApiKey": SecurityScheme(
        type="http",
        scheme="bearer",
        bearer_format="tdk_...",
        description="An API key (`tdk_...`, from `POST /api/v1/api-keys`) as the bearer token.",
    ),
    "AccessTokenQuery": SecurityScheme(
        type="apiKey",
        name="access_token",
        security_scheme_in="query",
        description="SSE streams only: an access token or API key as `?access_token=` "
        "(a browser's EventSource cannot send headers).",
    ),
}
TOKEN: list[SecurityRequirement] = [{"BearerToken": []}, {"ApiKey": []}]
STREAM_TOKEN: list[SecurityRequirement] = [*TOKEN, {"AccessTokenQuery": []}]
PUBLIC_PATHS = [re.compile(p) for p in PUBLIC]


def _header(description: str, schema: Schema | None = None) -> OpenAPIHeader:
    return OpenAPIHeader(schema=schema or Schema(type=OpenAPIType.STRING), description=description)


RETRY_AFTER = _header("Seconds to wait before retrying", Schema(type=OpenAPIType.INTEGER))
REQUEST_HEADERS = {
    "idempotency": Parameter(
        name="Idempotency-Key",
        param_in="header",
        required=False,
        schema=Schema(type=OpenAPIType.STRING, min_length=1, max_length=255),
        description="Makes a retry safe: the same key, method, path and body within 24 hours "
        "gets the first answer (`Idempotent-Replayed: true`) and runs nothing twice. "
        "1 to 255 printable ASCII characters, the caller's own.",
    ),
    "stream": Parameter(
        name="Last-Event-ID",
        param_in="header",
        required=False,
        schema=Schema(type=OpenAPIType.STRING),
        description="Resume after this session version (the `id:` of the last event seen): "
        "every stored event after it is sent first, then live ones. Also as `last_event_id`.",
    ),
}
# Answers other than the handler's and the errors, by operation id.
OTHER_RESPONSES = {
    "downloadFile": {
        "307": OpenAPIResponse(
            "`redirect=true` and a blob store that signs URLs: a short-lived URL of the bytes",
            headers={"Location": _header("The signed URL")},
        )
    },
}
SUCCESS_HEADERS = {
    "downloadArtifact": {"Content-Disposition": _header("`attachment` with the file's name")},
    "downloadFile": {"Content-Disposition": _header("`attachment` with the file's name")},
    "previewArtifact": {
        "X-Preview-Thumbnails": _header('`unavailable; reason="..."` when no thumbnails are made')
    },
}


def is_public(path: str) -> bool:
    return any(p.search(path) for p in PUBLIC_PATHS)


def is_idempotent(path: str, method: str) -> bool:
    """Whether the Idempotency-Key middleware honours a key on this operation."""
    return method == "post" and bool(COVERED.match(path))


def is_stream(path: str, method: str) -> bool:
    """Whether the access token may come as a query parameter (auth.py `_is_stream`)."""
    return method == "get" and path.endswith("/stream")


def document(path: str, method: str, operation: Operation) -> None:
    """Complete one operation: security, headers, error bodies, non-JSON answers."""
    op_id = operation.operation_id or ""
    operation.security = (
        [] if is_public(path) else STREAM_TOKEN if is_stream(path, method) else TOKEN
    )
    responses = dict(operation.responses or {})
    if op_id in BODIES:
        media_type, schema, description = BODIES[op_id]
        content = {media_type: OpenAPIMediaType(schema=schema)}
        responses["200"] = OpenAPIResponse(description, content=content)
    ok = responses.get("200")
    if op_id in ALTERNATIVES and isinstance(ok, OpenAPIResponse):
        ok.content = {**(ok.content or {}), **ALTERNATIVES[op_id]}
    _success_headers(op_id, responses, replayable=is_idempotent(path, method))
    responses.update(OTHER_RESPONSES.get(op_id, {}))
    for status in sorted(error_statuses(path, method, operation)):
        responses[str(status)] = _error(status, idempotent=is_idempotent(path, method))
    operation.responses = responses
    _request_headers(path, method, operation)


def error_statuses(path: str, method: str, operation: Operation) -> set[int]:
    """The error statuses a route can answer, with the error body."""
    statuses: set[int] = set() if EXEMPT.search(path) else {429, 503}
    if not path.startswith("/api/"):  # a query parameter that does not parse is still a 400
        return statuses | ({400} if operation.parameters else set())
    op_id = operation.operation_id or ""
    statuses.add(400)
    if not is_public(path) or op_id in WRONG_CREDENTIALS:
        statuses.add(401)
    if not is_public(path):
        statuses |= {403, 404} | ({409} if method != "get" else set())
    if operation.request_body is not None:
        statuses.add(413)
    if is_idempotent(path, method):
        statuses |= {409, 422}
    return statuses | EXTRA_ERRORS.get(op_id, set())


def _error(status: int, *, idempotent: bool) -> OpenAPIResponse:
    body = {
        "application/json": OpenAPIMediaType(schema=Reference(f"#/components/schemas/{ERROR_BODY}"))
    }
    retry = status in (429, 503) or (status == 409 and idempotent)
    headers: dict[str, OpenAPIHeader | Reference] | None = (
        {"Retry-After": RETRY_AFTER} if retry else None
    )
    return OpenAPIResponse(ERRORS[status], headers=headers, content=body)


def _success_headers(
    op_id: str, responses: dict[str, OpenAPIResponse | Reference], *, replayable: bool
) -> None:
    for status, response in responses.items():
        if not status.startswith("2") or not isinstance(response, OpenAPIResponse):
            continue
        headers = dict(response.headers or {})
        headers.update(SUCCESS_HEADERS.get(op_id, {}))
        if replayable:
            headers["Idempotent-Replayed"] = _header(
                "`true` when this is the stored answer to an earlier request with the same "
                "`Idempotency-Key`"
            )
        response.headers = headers or None


def _request_headers(path: str, method: str, operation: Operation) -> None:
    wanted = [
        REQUEST_HEADERS[kind]
        for kind, applies in (
            ("idempotency", is_idempotent(path, method)),
            ("stream", is_stream(path, method)),
        )
        if applies
    ]
    names = {p.name for p in wanted}
    kept = [
        p for p in operation.parameters or [] if not (isinstance(p, Parameter) and p.name in names)
    ]
    operation.parameters = [*kept, *wanted] or None
