"""A real cross-origin `fetch` from a page in headless Chromium to a real `tokendance
serve`: it succeeds from the allowed origin and fails from another, exactly as a
browser client on its own origin would see it.

The browser is Debian's `chromium` (the README's test command installs it where it
can), driven by Playwright with `executable_path`: Playwright's own browser download
is never used. Without a `chromium` on PATH the test is skipped, saying so.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from playwright.sync_api import Browser, sync_playwright

from tests.e2e.client import free_port, sign_up
from tests.e2e.conftest import StartServer

pytestmark = [pytest.mark.e2e]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
PAGE = b"<!doctype html><title>client</title><p>a browser client on its own origin</p>"

# Runs in the page: a GET and a preflighted POST (JSON, Idempotency-Key), both with the
# bearer token; the answer as the page can read it, or the error fetch raised.
FETCH = """async ([api, token, workspace]) => {
  const auth = {Authorization: `Bearer ${token}`};
  try {
    const listed = await fetch(`${api}/api/v1/workspaces`, {headers: auth});
    const made = await fetch(`${api}/api/v1/sessions`, {
      method: "POST",
      headers: {...auth, "Content-Type": "application/json", "Idempotency-Key": "browser-1"},
      body: JSON.stringify({workspace_id: workspace, title: "from the browser"}),
    });
    const body = await listed.json();
    const workspaces = (Array.isArray(body) ? body : body.items).map((w) => w.id);
    return {listed: listed.status, workspaces, made: made.status,
            session: (await made.json()).title};
  } catch (e) {
    return {error: String(e)};
  }
}"""


class _Page(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(PAGE)))
        self.end_headers()
        self.wfile.write(PAGE)

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the test says what went wrong."""


@contextmanager
def page_origin() -> Iterator[str]:
    """A tiny HTTP server of one page, on an origin of its own (its port)."""
    server = ThreadingHTTPServer(("127.0.0.1", free_port()), _Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def browser() -> Iterator[Browser]:
    if CHROMIUM is None:
        pytest.skip("no chromium on PATH (apt-get install chromium): the header tests stand in")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM)
        yield launched
        launched.close()


def fetch_from(browser: Browser, origin: str, api: str, token: str, workspace: str) -> object:
    page = browser.new_page()
    try:
        page.goto(f"{origin}/")
        return page.evaluate(FETCH, [api, token, workspace])
    finally:
        page.close()


def test_a_page_on_the_allowed_origin_calls_the_api_and_another_cannot(
    start_server: StartServer, browser: Browser
) -> None:
    with page_origin() as allowed, page_origin() as other:
        server = start_server(None, extra_env={"TOKENDANCE_CORS_ORIGINS": allowed})
        with server.client() as anonymous:
            user = sign_up(anonymous, "browser@example.com")
        token, workspace = str(user["access_token"]), str(user["workspace_id"])

        answered = fetch_from(browser, allowed, server.url, token, workspace)
        assert answered == {
            "listed": 200,
            "workspaces": [workspace],
            "made": 201,
            "session": "from the browser",
        }, answered

        refused = fetch_from(browser, other, server.url, token, workspace)
        assert refused == {"error": "TypeError: Failed to fetch"}
