"""Every route handler of the app resolves at most one dependency.

Litestar resolves a handler's dependencies level by level and runs a level with two or
more in an anyio task group, one task per dependency, on every request
(litestar-org/litestar#4563). Ours are all constants: handlers take them together as
one, `api: ApiDep` (adapters/http/deps.py), and pay no task group. This builds the real
app, which needs Postgres (hence an integration test).
"""

from __future__ import annotations

import pytest
from litestar.handlers import BaseRouteHandler
from litestar.routes import HTTPRoute

from adapters.http.app import create_app
from adapters.system import System

pytestmark = pytest.mark.integration


def test_no_route_handler_resolves_more_than_one_dependency(system: System) -> None:
    app = create_app(system)
    named: dict[str, list[str]] = {}  # "METHOD /path (handler)" -> dependencies it names
    for route in app.routes:
        handlers: list[BaseRouteHandler] = (
            list(route.route_handlers) if isinstance(route, HTTPRoute) else [route.route_handler]
        )
        for handler in handlers:
            provided = handler.resolve_dependencies()
            names = sorted(handler.parsed_fn_signature.parameters.keys() & provided.keys())
            methods = sorted(getattr(handler, "http_methods", ())) or ["*"]
            named[f"{','.join(methods)} {route.path} ({handler.handler_name})"] = names
    assert sum(bool(names) for names in named.values()) > 50, f"the whole app? {sorted(named)}"
    offending = {handler: names for handler, names in named.items() if len(names) > 1}
    assert not offending, "route handlers that resolve more than one dependency:\n" + "\n".join(
        f"  {handler}: {', '.join(names)}" for handler, names in sorted(offending.items())
    )
