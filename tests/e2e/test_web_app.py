"""The web client served by a real `tokendance serve` from `TOKENDANCE_WEB_DIR`: its page
on `/` and on the client's own paths, hashed assets cached for good with their types,
the API's paths untouched, and a page saying how to build it when there is no build.

The build here is a small fake one (an index.html and hashed files, as Vite writes
them), so these tests do not depend on `npm run build`.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.e2e.client import Server, assert_error
from tests.e2e.conftest import StartServer

pytestmark = [pytest.mark.e2e]

INDEX = (
    b'<!doctype html><html><head><script type="module" src="/assets/index-3f9a1c2b.js">'
    b'</script></head><body><div id="app"></div></body></html>\n'
)
ASSETS = {  # name under assets/ -> (bytes, the Content-Type it must answer with)
    "index-3f9a1c2b.js": (b"console.log('app')\n", "text/javascript"),
    "index-77aa01be.css": (b"body{margin:0}\n", "text/css"),
    "logo-1a2b3c4d.svg": (b'<svg xmlns="http://www.w3.org/2000/svg"/>\n', "image/svg+xml"),
    "inter-4c5d6e7f.woff2": (b"wOF2\x00\x01fake", "font/woff2"),
    "icon-9e8f7a6b.png": (b"\x89PNG\r\n\x1a\nfake", "image/png"),
}
BUILD_COMMAND = "npm ci --prefix web &amp;&amp; npm --prefix web run build"


def build(web_dir: Path) -> Path:
    """A Vite-like build: index.html, hashed files under assets/, a file at the top."""
    (web_dir / "assets").mkdir(parents=True)
    (web_dir / "index.html").write_bytes(INDEX)
    (web_dir / "favicon.svg").write_bytes(ASSETS["logo-1a2b3c4d.svg"][0])
    for name, (content, _) in ASSETS.items():
        (web_dir / "assets" / name).write_bytes(content)
    return web_dir


def serve(start_server: StartServer, web_dir: Path, **env: str) -> Server:
    return start_server(None, extra_env={"TOKENDANCE_WEB_DIR": str(web_dir), **env})


def assert_page(response: httpx.Response, server: Server) -> None:
    """The client's index.html, never cached, calling nothing but its own origin."""
    assert response.status_code == 200, response.text
    assert response.content == INDEX
    assert response.headers["content-type"].startswith("text/html")
    assert response.headers["cache-control"] == "no-cache"
    policy = directives(response)
    assert policy["default-src"] == ["'self'"]
    assert policy["script-src"] == ["'self'"]
    host = f"127.0.0.1:{server.port}"
    assert policy["connect-src"] == ["'self'", f"ws://{host}", f"wss://{host}"]
    assert policy["img-src"] == ["'self'", "data:", "blob:"]
    assert policy["frame-ancestors"] == ["'none'"]


def directives(response: httpx.Response) -> dict[str, list[str]]:
    policy = response.headers["content-security-policy"]
    parts = [d.split() for d in policy.split(";") if d.strip()]
    return {d[0]: d[1:] for d in parts}


def test_the_page_answers_at_root_and_on_the_clients_own_paths(
    start_server: StartServer, tmp_path: Path
) -> None:
    server = serve(start_server, build(tmp_path / "dist"))
    with server.client() as browser:  # no token: the page is what a visitor gets first
        for path in ("/", "/sessions/abc", "/workspaces/w1/usage", "/healthz", "/apis"):
            assert_page(browser.get(path), server)
        icon = browser.get("/favicon.svg")  # a file at the top of the build is itself
        assert icon.status_code == 200
        assert icon.content == ASSETS["logo-1a2b3c4d.svg"][0]
        assert icon.headers["content-type"].startswith("image/svg+xml")
        assert icon.headers["cache-control"] == "no-cache"  # not hashed: may change
        assert browser.head("/sessions/abc").status_code == 200


def test_hashed_assets_are_cached_for_good_with_their_types_and_a_missing_one_is_404(
    start_server: StartServer, tmp_path: Path
) -> None:
    server = serve(start_server, build(tmp_path / "dist"))
    with server.client() as browser:
        for name, (content, media_type) in ASSETS.items():
            asset = browser.get(f"/assets/{name}")
            assert asset.status_code == 200, (name, asset.text)
            assert asset.content == content
            assert asset.headers["content-type"].split(";")[0] == media_type, name
            cache = {d.strip() for d in asset.headers["cache-control"].split(",")}
            assert cache == {"public", "max-age=31536000", "immutable"}, name
        for missing in ("/assets/index-00000000.js", "/assets/", "/assets/%2e%2e/index.html"):
            answer = browser.get(missing)
            assert answer.content != INDEX, missing  # never the page in place of a file
            assert_error(answer, 404, "NOT_FOUND")


def test_the_api_keeps_its_paths_errors_and_limits_beside_the_page(
    start_server: StartServer, tmp_path: Path
) -> None:
    # 5 requests a minute per address: the page and its files must not use them up.
    server = serve(start_server, build(tmp_path / "dist"), TOKENDANCE_RATE_LIMIT_PER_MINUTE="5")
    with server.client() as browser:
        for _ in range(4):  # a page load is many requests: none is counted or refused
            assert_page(browser.get("/"), server)
            for name in ASSETS:
                assert browser.get(f"/assets/{name}").status_code == 200
        for method in ("GET", "POST", "DELETE"):
            assert_error(browser.request(method, "/api/v1/nope"), 404, "NOT_FOUND")
        assert_error(browser.get("/api/v1/sessions/abc/nope"), 404, "NOT_FOUND")
        assert_error(browser.get("/api"), 404, "NOT_FOUND")
        assert_error(browser.get("/schema/nope/deeper"), 404, "NOT_FOUND")
        assert_error(browser.get("/api/v1/sessions"), 401, "UNAUTHORIZED")  # still asks a token
        docs = browser.get("/api/v1/docs")
        assert docs.status_code == 200 and "swagger-ui" in docs.text
        document = browser.get("/schema/openapi.json")
        assert document.status_code == 200
        paths = document.json()["paths"]
        assert paths and all(
            p.startswith(("/api/", "/health", "/readiness", "/metrics")) for p in paths
        )
        assert browser.get("/health").json()["status"] in ("ok", "degraded")


def test_without_a_build_the_page_says_how_to_build_it_and_a_build_shows_at_once(
    start_server: StartServer, tmp_path: Path
) -> None:
    web_dir = tmp_path / "dist"  # absent
    server = serve(start_server, web_dir)
    with server.client() as browser:
        for path in ("/", "/sessions/abc"):
            page = browser.get(path)
            assert page.status_code == 503, page.text
            assert page.headers["content-type"].startswith("text/html")
            assert "The web app is not built" in page.text
            assert BUILD_COMMAND in page.text
            assert "TOKENDANCE_WEB_DIR" in page.text
            assert directives(page)["default-src"] == ["'self'"]
        assert browser.head("/").status_code == 503
        assert_error(browser.get("/assets/index-3f9a1c2b.js"), 404, "NOT_FOUND")
        assert browser.get("/api/v1/docs").status_code == 200  # the API works the same
        assert_error(browser.get("/api/v1/nope"), 404, "NOT_FOUND")
        build(web_dir)  # built while the server runs: served without a restart
        assert_page(browser.get("/"), server)
        assert browser.get("/assets/index-3f9a1c2b.js").content == ASSETS["index-3f9a1c2b.js"][0]
