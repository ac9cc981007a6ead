"""Every error a client can see, as `{detail, error_code, timestamp}` with the right status."""

from __future__ import annotations

import logging
import re
from datetime import UTC, datetime

import psycopg
from eventsourcing.persistence import InterfaceError, OperationalError
from litestar import MediaType, Request, Response
from litestar.datastructures import State
from litestar.exceptions import HTTPException, NotFoundException, ValidationException
from litestar.exceptions.http_exceptions import RequestEntityTooLarge
from litestar.handlers import HTTPRouteHandler
from litestar.status_codes import HTTP_500_INTERNAL_SERVER_ERROR

from adapters.http.contract.path_params import unparsed
from application.loop_writes import StoreBusy
from domain.errors import (
    Conflict,
    DomainError,
    InvalidCommand,
    MessageTooLarge,
    NotFound,
)

log = logging.getLogger(__name__)

CODES_BY_STATUS = {
    400: "VALIDATION_ERROR",
    401: "UNAUTHORIZED",
    403: "FORBIDDEN",
    404: "NOT_FOUND",
    405: "METHOD_NOT_ALLOWED",
    409: "CONFLICT",
    413: "PAYLOAD_TOO_LARGE",
    415: "UNSUPPORTED_MEDIA_TYPE",
    422: "VALIDATION_ERROR",
    429: "RATE_LIMITED",
    500: "INTERNAL_ERROR",
    503: "UNAVAILABLE",
}


class ApiError(HTTPException):
    """An error raised by the HTTP layer itself, with its own code."""

    def __init__(
        self, status_code: int, detail: str, code: str | None = None, **headers: str
    ) -> None:
        super().__init__(detail=detail, status_code=status_code, headers=headers or None)
        self.code = code or CODES_BY_STATUS.get(status_code, "ERROR")


def error_response(
    status: int, detail: str, code: str, headers: dict[str, str] | None = None
) -> Response[dict[str, str]]:
    body = {"detail": detail, "error_code": code, "timestamp": datetime.now(UTC).isoformat()}
    return Response(body, status_code=status, media_type=MediaType.JSON, headers=headers)


def status_of(error: DomainError) -> int:
    """The HTTP status of a domain error (auth errors carry their own)."""
    status = getattr(error, "http_status", None)
    if isinstance(status, int):
        return status
    if isinstance(error, NotFound):
        return 404
    if isinstance(error, MessageTooLarge):
        return 413
    if isinstance(error, Conflict | InvalidCommand):
        return 409
    return 400


def on_domain_error(
    _: Request[object, object, State], error: DomainError
) -> Response[dict[str, str]]:
    return error_response(status_of(error), str(error), error.code)


def named(field: str, problem: str) -> str:
    """A validation failure's detail, naming the field: "`settings.max_iterations`:
    expected `int` >= 1" (the same for a path, a query or a body)."""
    return f"`{field}`: {problem[:1].lower()}{problem[1:]}"


def invalid(field: str, problem: str) -> ApiError:
    """The 400 `VALIDATION_ERROR` for a field with a wrong value."""
    return ApiError(400, named(field, problem), "VALIDATION_ERROR")


EMPTY_BODY = "the body is empty: this request needs a JSON body"
_FIELD = re.compile(r"^Object (missing required|contains unknown) field `(.+)`$")


def _problem(p: dict[str, object]) -> str:
    """One of Litestar's validation problems, in our words (`key` is a dotted path)."""
    key, message = str(p.get("key") or ""), str(p.get("message", "")).strip()
    root = key in ("", "data") and p.get("source", "body") == "body"
    if root and message == "'data'":  # Litestar's KeyError: no body at all
        return EMPTY_BODY
    if field := _FIELD.match(message):
        name = field.group(2) if root else f"{key}.{field.group(2)}"
        return named(name, "required" if field.group(1) == "missing required" else "unknown field")
    if root:
        return f"the body: {message[:1].lower()}{message[1:]}"
    return named(key, message)


def on_validation_error(
    _: Request[object, object, State], error: ValidationException
) -> Response[dict[str, str]]:
    problems = error.extra if isinstance(error.extra, list) else []
    said = [_problem(p) for p in problems if isinstance(p, dict)]
    detail = "; ".join(said) if said else str(error.detail)
    return error_response(400, detail, "VALIDATION_ERROR")


def on_http_error(
    request: Request[object, object, State], error: HTTPException
) -> Response[dict[str, str]]:
    if isinstance(error, NotFoundException) and isinstance(error.__cause__, ValueError):
        # The router's answer to a path parameter that does not parse (an id not a UUID).
        bad = unparsed(request.app, request.method, request.scope["path"])
        if bad is not None:
            return error_response(400, named(*bad), "VALIDATION_ERROR")
    if isinstance(error, RequestEntityTooLarge) and error.detail == RequestEntityTooLarge.detail:
        return error_response(413, _too_large(request), "PAYLOAD_TOO_LARGE")
    code = getattr(error, "code", None) or CODES_BY_STATUS.get(error.status_code, "ERROR")
    return error_response(error.status_code, str(error.detail), code, dict(error.headers or {}))


def _too_large(request: Request[object, object, State]) -> str:
    """What a body over its route's limit is told: the route's own words
    (`opt={"too_large": ...}`), else the limit in bytes."""
    handler = request.scope.get("route_handler")
    if not isinstance(handler, HTTPRouteHandler):
        return "the body is too large"
    said = handler.opt.get("too_large")
    if isinstance(said, str):
        return said
    limit = handler.resolve_request_max_body_size()
    return f"the body may have at most {limit:,} bytes" if limit else "the body is too large"


def on_too_deep(
    _: Request[object, object, State], error: RecursionError
) -> Response[dict[str, str]]:
    return error_response(400, "the request body is nested too deeply", "VALIDATION_ERROR")


def on_database_unavailable(
    request: Request[object, object, State], error: Exception
) -> Response[dict[str, str]]:
    # Postgres restarting (or unreachable): the retries are spent, nothing was written.
    log.warning("database unavailable on %s %s: %s", request.method, request.url.path, error)
    return error_response(
        503, "the database is unavailable; try again shortly", "UNAVAILABLE", {"Retry-After": "2"}
    )


def on_store_busy(
    request: Request[object, object, State], error: Exception
) -> Response[dict[str, str]]:
    # Every connection of a pool stayed in use for its timeout: nothing was written.
    log.warning(
        "no database connection free for %s %s: %s", request.method, request.url.path, error
    )
    return error_response(
        503, "the server is busy: every database connection is in use; try again shortly",
        "UNAVAILABLE", {"Retry-After": "1"},
    )  # fmt: skip


def on_unexpected(
    request: Request[object, object, State], error: Exception
) -> Response[dict[str, str]]:
    log.exception("unhandled error on %s %s", request.method, request.url.path, exc_info=error)
    return error_response(HTTP_500_INTERNAL_SERVER_ERROR, "internal server error", "INTERNAL_ERROR")


EXCEPTION_HANDLERS = {
    DomainError: on_domain_error,
    ValidationException: on_validation_error,
    HTTPException: on_http_error,
    RecursionError: on_too_deep,  # msgspec on absurdly nested JSON
    StoreBusy: on_store_busy,  # a pool with no free connection (adapters/postgres/busy_store)
    OperationalError: on_database_unavailable,  # eventsourcing's, after its retries
    InterfaceError: on_database_unavailable,
    psycopg.OperationalError: on_database_unavailable,  # the read models' own queries
    Exception: on_unexpected,
}
