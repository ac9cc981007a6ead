"""The chat view's artifacts panel: a run writes a report, the panel lists it (refreshed by
the run's `artifact` event), the preview dialog renders its Markdown, and Download fetches
its bytes with the bearer token in a header."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import Response, expect

from tests.e2e.conftest import StartServer
from tests.e2e.web.conftest import Visit
from tests.e2e.web.helpers import new_session, register

pytestmark = [pytest.mark.e2e]


def test_a_report_is_listed_previewed_and_downloaded(
    start_server: StartServer, visit: Callable[[str], Visit]
) -> None:
    server = start_server("web_artifacts")
    seen = visit(server.url)
    page = seen.page
    register(seen, "artifacts@example.com")
    new_session(seen)
    panel = page.get_by_role("region", name="Artifacts")
    expect(panel).to_contain_text("No artifacts yet")

    page.get_by_placeholder("Ask the agent…").fill("Write me a report on heat pumps")
    page.get_by_role("button", name="Send").click()
    report = panel.locator('.artifact[data-type="report"]')
    expect(report).to_have_count(1)  # no reload: the `artifact` event refreshed the list
    expect(report).to_contain_text("v1")

    report.get_by_role("button", name="Preview").click()
    dialog = page.get_by_role("dialog")
    expect(dialog.locator('[data-preview="markdown"] h2')).to_have_text("Summary")
    seen.screenshot("web-artifacts")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()

    downloads: list[Response] = []
    page.on("response", lambda r: downloads.append(r) if "/download" in r.url else None)
    with page.expect_download() as saved:
        report.get_by_role("button", name="Download").click()
    assert saved.value.suggested_filename == "heat-pumps-in-the-cold.md"
    assert len(downloads) == 1, [r.url for r in downloads]
    fetched = downloads[0]
    assert fetched.status == 200
    assert int(fetched.all_headers()["content-length"]) > 0
    assert "## Summary" in saved.value.path().read_text()  # the fetched bytes, saved
    assert fetched.request.headers.get("authorization", "").startswith("Bearer ")
    assert "token" not in fetched.url
    assert seen.foreign() == [], seen.foreign()
