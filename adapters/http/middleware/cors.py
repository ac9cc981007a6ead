"""CORS for browser clients on other origins: Litestar's `CORSConfig` from the settings.

Litestar's CORS middleware wraps the whole application, outside the route middleware
(`Litestar._create_asgi_handler`): a preflight (OPTIONS with an `Origin`) is answered
there, before the bearer-token check and the rate limits, so it needs no token and uses
up no request; it answers 204 with the allow headers for an allowed origin, and 400
with none for any other. Every other answer to an allowed origin, errors included (a
401, a 429 with its `Retry-After`), carries `Access-Control-Allow-Origin`; an answer to
another origin never does, so its page cannot read it. Credentials stay off: the API
authenticates by bearer token, never by cookie.
"""

from __future__ import annotations

from litestar.config.cors import CORSConfig
from litestar.types import Method

from adapters.config.origins import DEV_ORIGIN
from adapters.config.settings import Settings

ALLOW_HEADERS = ["Authorization", "Content-Type", "Idempotency-Key", "Last-Event-ID"]
# What a client reads of an answer beyond the CORS-safelisted headers: when to retry
# (429, 503), a download's file name, a replayed command, why a deck has no thumbnails.
EXPOSE_HEADERS = [
    "Retry-After",
    "Content-Disposition",
    "Idempotent-Replayed",
    "X-Preview-Thumbnails",
]
ALLOW_METHODS: list[Method] = ["GET", "POST", "PATCH", "PUT", "DELETE", "OPTIONS"]
MAX_AGE = 600  # seconds a browser may keep a preflight's answer


def allowed_origins(settings: Settings) -> tuple[str, ...]:
    """The configured origins; on the embedded defaults (no TOKENDANCE_DATABASE_URL) also
    the web client's dev server, so it works out of the box."""
    embedded = (DEV_ORIGIN,) if settings.database_url is None else ()
    return tuple(dict.fromkeys((*settings.cors_origins, *embedded)))


def cors_config(settings: Settings) -> CORSConfig | None:
    """The app's CORS, or None (no CORS headers at all) when no origin is allowed."""
    origins = allowed_origins(settings)
    if not origins:
        return None
    return CORSConfig(
        allow_origins=list(origins),
        allow_methods=[*ALLOW_METHODS],
        allow_headers=list(ALLOW_HEADERS),
        expose_headers=list(EXPOSE_HEADERS),
        allow_credentials=False,
        max_age=MAX_AGE,
    )
