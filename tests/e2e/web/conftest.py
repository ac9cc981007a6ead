"""The built web app (`web/dist`) in Debian's Chromium, against a real `tokendance serve`.

Playwright drives the system's `chromium` with `executable_path` (never a downloaded
browser). Without it, or without a build (`npm --prefix web run build`), the tests are
skipped, saying which. Every request the page makes is recorded, so a test can check
that none goes to a host but the server's.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from tests.e2e.client import Server
from tests.e2e.conftest import StartServer

# What a page shows after a run (an artifact, a status) waits on the worker and the
# read models: with two test processes on two cores that was seen taking over the
# assertions' default 5 s. The same 20 s as the pages' own actions.
WAIT_MS = 20_000
expect.set_options(timeout=WAIT_MS)

ROOT = Path(__file__).parents[3]
DIST = Path(os.environ.get("WEB_DIST") or ROOT / "web" / "dist")
SCREENSHOTS = ROOT / "docs" / "screenshots"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if CHROMIUM is None:
        pytest.skip("no chromium on PATH (apt-get install chromium): the web app is not tested")
    if not (DIST / "index.html").exists():
        pytest.skip("web/dist is not built (npm --prefix web run build): the web app is not tested")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM)
        yield launched
        launched.close()


@pytest.fixture
def start_server(start_server: StartServer) -> StartServer:
    """The e2e servers, serving the build under test."""

    def start(*args: Any, extra_env: dict[str, str] | None = None, **kw: Any) -> Server:
        return start_server(
            *args, extra_env={"TOKENDANCE_WEB_DIR": str(DIST), **(extra_env or {})}, **kw
        )

    return start


@dataclass
class Visit:
    """A page of the app with every URL it asked for (HTTP and WebSocket)."""

    page: Page
    base: str
    urls: list[str] = field(default_factory=list)

    def go(self, path: str) -> None:
        self.page.goto(f"{self.base}{path}")

    def foreign(self) -> list[str]:
        """The URLs that went to another host than the server's."""
        ours = urlsplit(self.base).netloc
        return [u for u in self.urls if urlsplit(u).netloc not in (ours, "")]

    def screenshot(self, name: str) -> None:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(SCREENSHOTS / f"{name}.png"))


@pytest.fixture
def visit(browser: Browser) -> Iterator[object]:
    pages: list[Page] = []

    def open_page(base: str) -> Visit:
        context = browser.new_context(viewport={"width": 1280, "height": 800}, locale="en-US")
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        seen = Visit(page, base)
        page.on("request", lambda r: seen.urls.append(r.url))
        page.on("websocket", lambda ws: seen.urls.append(ws.url))
        pages.append(page)
        return seen

    yield open_page
    for page in pages:
        page.context.close()
