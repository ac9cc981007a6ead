"""Which path parameter of a request did not parse (an id that is not a UUID).

Litestar's router answers 404 when a typed path parameter (`{session_id:uuid}`) does not
parse, naming nothing. The error handler asks `unparsed` which parameter of which route
it was, so the answer is the 400 a bad id in a query or a body gets.
"""

from __future__ import annotations

from uuid import UUID

from litestar import Litestar
from litestar.routes import HTTPRoute
from litestar.types.internal_types import PathParameterDefinition

# msgspec's words for the same mistake in a body or a query, so all three read alike.
PROBLEMS: dict[type, str] = {UUID: "Invalid UUID", int: "Expected `int`, got `str`"}


def unparsed(app: Litestar, method: str, path: str) -> tuple[str, str] | None:
    """The parameter (its name and what is wrong) that keeps `path` from a route of
    `method`; None when no route would take it with any value there."""
    segments = [s for s in path.split("/") if s]
    for route in app.routes:
        if not isinstance(route, HTTPRoute) or method.upper() not in route.methods:
            continue
        components = route.path_components
        if len(components) != len(segments):
            continue
        failed = _first_failure(components, segments)
        if failed is not None:
            return failed
    return None


def _first_failure(
    components: list[str | PathParameterDefinition], segments: list[str]
) -> tuple[str, str] | None:
    failure = None
    for component, segment in zip(components, segments, strict=True):
        if isinstance(component, str):
            if component != segment:
                return None  # another route's literal part
        elif component.parser is not None and failure is None:
            try:
                component.parser(segment)
            except ValueError:
                failure = (component.name, PROBLEMS.get(component.type, "Invalid value"))
    return failure
