"""The Workspace files screen: upload (progress to 100%, listed), download with the bearer
token in a header, delete after a confirm, and an upload over the server's limit showing
the API's `detail` and `error_code` in the page."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import Response, expect

from tests.e2e.conftest import StartServer
from tests.e2e.web.conftest import Visit
from tests.e2e.web.helpers import PASSWORD, register, team_with_viewer

pytestmark = [pytest.mark.e2e]

NOTES = b"# Notes\n\nTides at Brest.\n"


def test_upload_download_delete_and_an_upload_over_the_limit(
    start_server: StartServer, visit: Callable[[str], Visit]
) -> None:
    server = start_server(None, extra_env={"TOKENDANCE_MAX_UPLOAD_BYTES": "1000"})
    seen = visit(server.url)
    page = seen.page
    register(seen, "files@example.com")
    page.get_by_role("link", name="Files").click()
    page.wait_for_url("**/workspaces/*/files")
    expect(page.get_by_text("No files yet")).to_be_visible()

    chooser = page.get_by_label("Choose a file")
    chooser.set_input_files(
        files=[{"name": "notes.md", "mimeType": "text/markdown", "buffer": NOTES}]
    )
    expect(page.get_by_test_id("upload-percent")).to_have_text("100%")
    row = page.locator("tr.file", has_text="notes.md")
    expect(row).to_have_count(1)
    expect(row).to_contain_text(f"{len(NOTES)} B")

    downloads: list[Response] = []
    page.on("response", lambda r: downloads.append(r) if "/files/" in r.url else None)
    with page.expect_download() as saved:
        row.get_by_role("button", name="Download").click()
    assert saved.value.suggested_filename == "notes.md"
    assert len(downloads) == 1, [r.url for r in downloads]
    assert downloads[0].status == 200
    assert downloads[0].request.headers.get("authorization", "").startswith("Bearer ")
    assert saved.value.path().read_bytes() == NOTES

    chooser.set_input_files(
        files=[{"name": "big.bin", "mimeType": "application/octet-stream", "buffer": b"x" * 2000}]
    )
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("at most 1,000 bytes")
    expect(alert).to_contain_text("PAYLOAD_TOO_LARGE")
    expect(page.locator("tr.file")).to_have_count(1)
    seen.screenshot("web-files")

    row.get_by_role("button", name="Delete").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("notes.md")
    dialog.get_by_role("button", name="Delete").click()
    expect(page.locator("tr.file")).to_have_count(0)
    page.reload()
    expect(page.get_by_text("No files yet")).to_be_visible()  # gone on the server too
    assert seen.foreign() == [], seen.foreign()


def test_a_viewer_lists_and_downloads_but_gets_no_upload_or_delete(
    start_server: StartServer, visit: Callable[[str], Visit]
) -> None:
    server = start_server(None)
    owner, _, workspace = team_with_viewer(server)
    put = owner.post(f"/api/v1/workspaces/{workspace}/files", files={"file": ("notes.md", NOTES)})
    assert put.status_code == 201, put.text

    seen = visit(server.url)
    page = seen.page
    seen.go(f"/workspaces/{workspace}/files")
    page.get_by_label("Email").fill("vera@example.com")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"**/workspaces/{workspace}/files")
    row = page.locator("tr.file", has_text="notes.md")
    expect(row.get_by_role("button", name="Download")).to_be_visible()
    assert row.get_by_role("button", name="Delete").count() == 0
    assert page.get_by_test_id("dropzone").count() == 0
