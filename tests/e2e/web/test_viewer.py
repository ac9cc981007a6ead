"""A viewer of a team workspace reads a session waiting for approval in the page, with no
chat input and no approve button; the API refuses their message anyway."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import expect

from tests.e2e.client import is_event, read_sse
from tests.e2e.conftest import StartServer
from tests.e2e.web.conftest import Visit
from tests.e2e.web.helpers import PASSWORD, team_with_viewer

pytestmark = [pytest.mark.e2e]


def test_a_viewer_sees_the_session_but_gets_no_input_and_no_approve_button(
    start_server: StartServer, visit: Callable[[str], Visit]
) -> None:
    server = start_server("one_tool")
    owner, viewer, workspace = team_with_viewer(server)
    created = owner.post(
        "/api/v1/sessions/",
        json={"workspace_id": workspace, "title": "Shared", "settings": {"confirmation": "always"}},
    )
    sid = created.json()["id"]
    asked = read_sse(
        owner, "POST", f"/api/v1/chat/{sid}/message",
        json={"content": "note it"}, until=is_event("confirm_required"), timeout=30,
    )  # fmt: skip
    assert asked.of("confirm_required"), asked.events

    seen = visit(server.url)
    page = seen.page
    seen.go(f"/sessions/{sid}")
    page.get_by_label("Email").fill("vera@example.com")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"**/sessions/{sid}")

    log = page.get_by_test_id("chat-log")
    expect(log.locator(".chat-message", has_text="note it")).to_be_visible()
    expect(page.get_by_test_id("viewer-note")).to_be_visible()
    expect(log).to_contain_text("Approval needed")  # told, quietly, that it waits
    assert page.get_by_placeholder("Ask the agent…").count() == 0
    assert page.get_by_role("button", name="Approve").count() == 0
    expect(page.get_by_role("button", name="New session")).to_be_disabled()
    expect(page.get_by_test_id("sessions")).to_contain_text("Shared")  # its workspace's list
    seen.screenshot("web-chat-viewer")

    refused = viewer.post(f"/api/v1/chat/{sid}/message", json={"content": "me too"})
    assert refused.status_code == 403, refused.text
    assert seen.foreign() == []
