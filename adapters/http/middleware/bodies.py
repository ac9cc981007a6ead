"""A request body read as JSON: one that is not JSON answers 400 saying where.

Litestar decodes a body with msgspec, whose errors read "Input data was truncated" or
"JSON is malformed: ... (byte 8)", and lets invalid UTF-8 in a string escape as a
`UnicodeDecodeError` (a 500). `JsonRequest` (the app's request class) turns both into
400 `VALIDATION_ERROR` "the body is not valid JSON: <what, where>".
"""

from __future__ import annotations

from litestar import Request
from litestar.datastructures import State
from litestar.exceptions import SerializationException

from adapters.http.errors import ApiError
from application.accounts import Principal

MALFORMED = "JSON is malformed: "


class JsonRequest(Request[Principal, str, State]):
    """Litestar's request, whose `json()` says what is wrong with a body that is not JSON."""

    async def json(self) -> object:
        try:
            return await super().json()
        except SerializationException as e:
            raise not_json(str(e.detail)) from None
        except UnicodeDecodeError:
            raise not_json(_bad_utf8(await self.body())) from None


def not_json(problem: str) -> ApiError:
    """The 400 for a body msgspec could not read (`problem`: msgspec's words)."""
    if problem.startswith(MALFORMED):
        problem = problem.removeprefix(MALFORMED)
    elif "truncated" in problem:
        problem = "it ends before the JSON does (truncated)"
    return ApiError(400, f"the body is not valid JSON: {problem}")


def _bad_utf8(body: bytes) -> str:
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"it is not UTF-8 text (byte {e.start})"
    return "a string in it is not UTF-8 text"
