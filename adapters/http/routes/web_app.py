"""The web client (`web/`, built into `TOKENDANCE_WEB_DIR`, by default `web/dist`) at `/`.

- `/assets/...`: Vite's files, named by their content's hash, so cached for a year
  (`immutable`); a missing one is the API's JSON 404, never the page.
- Any other GET path but the API's (`/api/`, `/schema`, `/health`, `/readiness`,
  `/metrics`): the build's file of that name (`/favicon.svg`), else `index.html`, whose
  router shows the path (`/sessions/abc`). Both `no-cache`: a new build shows at once.
- The page may load and call its own origin alone (`CSP`), so it can reach no other host.
- No build (no `index.html` in the directory): the client's paths answer 503 with a page
  saying how to build it; the API works the same. 503, not 200, so a check of `/`
  (`curl -f`, a browser test) fails instead of passing on the placeholder. The directory
  is looked at on each request: a build made while the server runs is served at once.
- These routes need no token, count towards no rate limit and stay out of the OpenAPI
  document.
"""

from __future__ import annotations

import contextlib
import mimetypes
import re
from html import escape
from pathlib import Path, PurePath

from litestar import MediaType, Request, get, head
from litestar.datastructures import CacheControlHeader, State
from litestar.exceptions import NotFoundException, ServiceUnavailableException
from litestar.file_system import BaseLocalFileSystem
from litestar.handlers import HTTPRouteHandler
from litestar.response.base import ASGIResponse
from litestar.response.file import ASGIFileResponse
from litestar.router import Router
from litestar.static_files import StaticFiles, create_static_files_router

ASSETS = "/assets"
API_PREFIXES = ("/api", "/schema", "/health", "/readiness", "/metrics")
BUILD = "npm ci --prefix web && npm --prefix web run build"
# Route options: no bearer token (BearerTokenAuthentication), no rate limit (limits.py).
OPEN = {"exclude_from_auth": True, "exclude_from_limits": True}
YEAR = 365 * 24 * 3600
# Where the system's table lacks them (no /etc/mime.types), a file would go as octet-stream.
TYPES = {
    ".js": "text/javascript",
    ".mjs": "text/javascript",
    ".css": "text/css",
    ".svg": "image/svg+xml",
    ".woff2": "font/woff2",
    ".woff": "font/woff",
    ".png": "image/png",
    ".webp": "image/webp",
    ".json": "application/json",
    ".webmanifest": "application/manifest+json",
    ".map": "application/json",
}
NO_CACHE = {"Cache-Control": "no-cache"}
_HOST = re.compile(r"^[A-Za-z0-9.\-\[\]:]+$")


def web_routes(web_dir: Path) -> list[Router | HTTPRouteHandler]:
    """The built client's files under `/assets`, and its page on every other path."""
    for suffix, media_type in TYPES.items():
        mimetypes.add_type(media_type, suffix)
    assets = create_static_files_router(
        ASSETS,
        [web_dir / "assets"],
        cache_control=CacheControlHeader(public=True, max_age=YEAR, immutable=True),
        include_in_schema=False,
        name="web-assets",
        opt=OPEN,
    )
    files = StaticFiles(False, [web_dir], BaseLocalFileSystem())
    paths = ["/", "/{path:path}"]

    @get(paths, include_in_schema=False, opt=OPEN, name="web-app")
    async def page(request: Request[object, object, State]) -> ASGIResponse:
        return await _answer(request, web_dir, files, head=False)

    @head(paths, include_in_schema=False, opt=OPEN, name="web-app/head")
    async def page_head(request: Request[object, object, State]) -> ASGIFileResponse:
        answer = await _answer(request, web_dir, files, head=True)
        if isinstance(answer, ASGIFileResponse):
            return answer
        raise ServiceUnavailableException("the web app is not built")

    return [assets, page, page_head]


async def _answer(
    request: Request[object, object, State], web_dir: Path, files: StaticFiles, *, head: bool
) -> ASGIResponse:
    path = request.url.path
    if any(path == p or path.startswith(f"{p}/") for p in API_PREFIXES):
        raise NotFoundException()  # the API's, as if this route did not exist
    if not (web_dir / "index.html").is_file():
        return not_built(request)
    name = PurePath(path).relative_to("/")
    answer = None
    if name.parts and not name.name.startswith("."):
        with contextlib.suppress(NotFoundException):  # none: a path of the client's router
            answer = await files.handle(name.as_posix(), is_head_response=head)
    if answer is None:
        answer = await files.handle("index.html", is_head_response=head)
    answer.headers.update({**NO_CACHE, **security_headers(request)})
    return answer


def security_headers(request: Request[object, object, State]) -> dict[str, str]:
    """What an HTML answer of the client carries: the page reaches its own origin alone
    (the push socket at the same host; `'self'` covers ws: only in newer browsers)."""
    host = request.headers.get("host", "")
    sockets = f" ws://{host} wss://{host}" if _HOST.match(host) else ""
    policy = (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
        f"img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'{sockets}; "
        "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
    )
    return {"Content-Security-Policy": policy, "X-Content-Type-Options": "nosniff"}


def not_built(request: Request[object, object, State]) -> ASGIResponse:
    """503 and a page saying the web app is not built, and how to build it."""
    page = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>TokenDance: web app not built</title></head>
<body>
<h1>The web app is not built</h1>
<p>This server has no built web client to show. The API works without it:
<a href="/api/v1/docs">/api/v1/docs</a>.</p>
<p>Build it from the repository's root (needs Node.js 20 and npm; on Debian
<code>apt-get install nodejs npm</code>), then reload this page:</p>
<pre><code>{escape(BUILD)}</code></pre>
<p>A build elsewhere is served when <code>TOKENDANCE_WEB_DIR</code> names its directory
(the one holding <code>index.html</code>).</p>
</body></html>
"""
    headers = {**NO_CACHE, **security_headers(request)}
    return ASGIResponse(body=page, status_code=503, media_type=MediaType.HTML, headers=headers)


def where(web_dir: Path, host: str, port: int) -> str:
    """What `serve` says at start: the web app's address, or that it is not built."""
    if (web_dir / "index.html").is_file():
        shown = "localhost" if host in ("0.0.0.0", "::", "") else host
        return f"web app: http://{shown}:{port}/"
    return (
        f"web app: not built (no index.html in {web_dir}); build it with `{BUILD}` "
        "(Node.js and npm needed); the API works without it"
    )
