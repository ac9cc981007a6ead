"""The OpenAPI document without a server: `tokendance openapi` writes it to `OPENAPI_FILE`.

The routes and the OpenAPI configuration are the app's own (`app.routes`,
`openapi.openapi_config`); the app built here only describes them, so its one
dependency, `api`, is never provided (a request would be answered 500; none is made).
The web client generates its TypeScript types from the file (web/package.json).
"""

from __future__ import annotations

import json
from pathlib import Path

from litestar import Litestar
from litestar.di import Provide
from litestar.openapi.spec import OpenAPI

from adapters.http.app import routes
from adapters.http.contract.openapi import complete, openapi_config
from application.workspace_files import DEFAULT_MAX_BYTES

OPENAPI_FILE = Path(__file__).parents[3] / "schemas" / "openapi.json"


def openapi_document() -> OpenAPI:
    """The document the app serves at `/schema/openapi.json`."""
    app = Litestar(
        route_handlers=routes(DEFAULT_MAX_BYTES),  # the body limit is not in the document
        dependencies={"api": Provide(_no_api, sync_to_thread=False)},
        openapi_config=openapi_config(),
    )
    document = app.openapi_schema
    complete(document)
    return document


def openapi_text() -> str:
    """The document as `OPENAPI_FILE` holds it."""
    return json.dumps(openapi_document().to_schema(), indent=2, ensure_ascii=False) + "\n"


def write_openapi(*, check: bool) -> int:
    """Write `OPENAPI_FILE` (`check`: only say whether it is current); the exit status."""
    text = openapi_text()
    if check:
        current = OPENAPI_FILE.read_text() if OPENAPI_FILE.exists() else ""
        if current != text:
            print(f"{OPENAPI_FILE} is out of date: run `tokendance openapi`")
            return 1
        return 0
    OPENAPI_FILE.write_text(text)
    print(f"wrote {OPENAPI_FILE}")
    return 0


def _no_api() -> None:
    raise RuntimeError("the OpenAPI document's app serves no requests")
