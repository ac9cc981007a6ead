"""The Team, workspace Settings and API keys screens, and an invitation link: an owner adds
a registered user, invites an unregistered email, re-roles and removes (the last owner
cannot be); the invitee registers through the link and lands in the team's workspace; a
viewer sees no controls (the API refuses them anyway); settings are checked in the page
and by the server; an API key is shown once, works, and answers 401 once revoked."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from playwright.sync_api import expect

from tests.e2e.client import sign_up
from tests.e2e.conftest import StartServer
from tests.e2e.web.conftest import Visit
from tests.e2e.web.helpers import PASSWORD, register, sign_in, team_with_viewer

pytestmark = [pytest.mark.e2e]


def test_an_owner_adds_invites_re_roles_and_removes_and_the_invitee_joins_by_the_link(
    start_server: StartServer, visit: Callable[[str], Visit]
) -> None:
    server = start_server(None)
    owner, _, workspace = team_with_viewer(server)
    sign_up(server.client(), "bob@example.com")
    seen = visit(server.url)
    page = seen.page
    sign_in(seen, f"/workspaces/{workspace}/team", "olga@example.com")
    expect(page.get_by_text("Team Research, which workspace Papers belongs to")).to_be_visible()
    rows = page.locator("tr.member")
    expect(rows).to_have_count(2)
    expect(page.locator('tr[data-email="vera@example.com"]')).to_contain_text("viewer")

    page.get_by_label("Email", exact=True).fill("bob@example.com")
    page.get_by_role("button", name="Add", exact=True).click()
    bob = page.locator('tr[data-email="bob@example.com"]')
    expect(bob).to_have_count(1)
    expect(bob.get_by_label("Role of bob")).to_have_value("member")

    page.get_by_label("Email", exact=True).fill("carol@example.com")
    page.locator("form").get_by_label("Role").select_option("admin")
    page.get_by_role("button", name="Add", exact=True).click()
    invitation = page.get_by_test_id("invitation")
    expect(invitation).to_contain_text("Nobody has registered with carol@example.com")
    link = page.get_by_label("Invitation link").input_value()
    assert link.startswith(f"{server.url}/invitations/"), link
    expect(rows).to_have_count(3)  # carol is not a member until she accepts
    seen.screenshot("web-team")

    bob.get_by_label("Role of bob").select_option("admin")
    expect(page.get_by_role("alert")).to_have_count(0)
    page.reload()
    expect(bob.get_by_label("Role of bob")).to_have_value("admin")  # the server kept it
    team = owner.get("/api/v1/teams/").json()["items"]
    research = next(t for t in team if t["name"] == "Research")["id"]
    members = owner.get(f"/api/v1/teams/{research}/members").json()["items"]
    assert {m["email"]: m["role"] for m in members}["bob@example.com"] == "admin"

    page.locator('tr[data-email="olga@example.com"]').get_by_role("button", name="Remove").click()
    page.get_by_role("dialog").get_by_role("button", name="Remove").click()
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("a team keeps at least one owner")  # the API's 409
    expect(alert).to_contain_text("INVALID_COMMAND")
    expect(rows).to_have_count(3)
    bob.get_by_role("button", name="Remove").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("bob@example.com")
    dialog.get_by_role("button", name="Remove").click()
    expect(bob).to_have_count(0)
    members = owner.get(f"/api/v1/teams/{research}/members").json()["items"]
    assert "bob@example.com" not in {m["email"] for m in members}
    page.emulate_media(color_scheme="dark")  # the theme follows the system's by default
    seen.screenshot("web-team-dark")
    page.emulate_media(color_scheme="light")

    invitee = visit(server.url)
    other = invitee.page
    other.goto(link)
    expect(other.get_by_role("heading", name="Join a team")).to_be_visible()
    invitee.screenshot("web-invitation")
    other.get_by_role("button", name="Create account").click()
    expect(other).to_have_url(
        re.compile(r"/register\?next=%2Finvitations%2Ftdi_|/register\?next=/invitations/tdi_")
    )
    other.get_by_label("Name").fill("Carol")
    other.get_by_label("Email").fill("carol@example.com")
    other.get_by_label("Password").fill(PASSWORD)
    other.get_by_role("button", name="Create account").click()
    other.get_by_role("button", name="Accept invitation").click()
    expect(other.get_by_test_id("workspace")).to_have_value(workspace)
    expect(other.get_by_test_id("workspace").locator("option:checked")).to_have_text(
        "Papers · admin"
    )
    invitee.screenshot("web-invitation-accepted")

    other.goto(link)  # used once
    other.get_by_role("button", name="Accept invitation").click()
    expect(other.get_by_role("alert")).to_contain_text("INVITATION_INVALID")
    expect(page.locator('tr[data-email="carol@example.com"]')).to_have_count(0)
    page.reload()
    expect(page.locator('tr[data-email="carol@example.com"]')).to_contain_text("admin")
    assert seen.foreign() == [] and invitee.foreign() == [], seen.foreign() + invitee.foreign()


def test_settings_are_checked_as_the_api_checks_and_a_viewer_only_reads(
    start_server: StartServer, visit: Callable[[str], Visit]
) -> None:
    server = start_server(None, extra_env={"TOKENDANCE_MAX_TOKENS": "8192"})
    owner, viewer, workspace = team_with_viewer(server)
    seen = visit(server.url)
    page = seen.page
    sign_in(seen, f"/workspaces/{workspace}/settings", "olga@example.com")
    name = page.get_by_label("Workspace name")
    expect(name).to_have_value("Papers")
    name.fill("Papers 2")
    page.get_by_label("Ask before tool calls").select_option("always")
    page.get_by_label("Allowed tools").fill("web_search, code_execute")
    page.get_by_label("Max iterations").fill("0")
    page.get_by_label("Thinking budget").fill("10000")
    page.get_by_role("button", name="Save").click()
    errors = page.get_by_test_id("field-error")
    expect(errors).to_have_count(1)
    expect(errors).to_have_text("A whole number from 1 to 500")  # the page's own check
    page.get_by_label("Max iterations").fill("12")
    page.get_by_role("button", name="Save").click()
    expect(errors).to_contain_text("below the output limit of a turn (8192 tokens)")  # the API's
    expect(errors).to_contain_text("VALIDATION_ERROR")
    page.get_by_label("Thinking budget").fill("2048")
    page.get_by_role("button", name="Save").click()
    expect(page.get_by_role("status")).to_have_text("Saved")
    page.evaluate("window.scrollTo(0, 0)")
    expect(errors).to_have_count(0)
    seen.screenshot("web-workspace-settings")
    mine = next(w for w in owner.get("/api/v1/workspaces/").json()["items"] if w["id"] == workspace)
    assert mine["name"] == "Papers 2"
    assert mine["settings"] == {
        "confirmation": "always", "allowed_tools": ["web_search", "code_execute"],
        "max_iterations": 12, "thinking_budget": 2048,
    }  # fmt: skip

    reader = visit(server.url)
    other = reader.page
    sign_in(reader, f"/workspaces/{workspace}/settings", "vera@example.com")
    expect(other.get_by_test_id("read-only")).to_be_visible()
    expect(other.get_by_label("Workspace name")).to_have_value("Papers 2")
    expect(other.get_by_label("Workspace name")).to_be_disabled()
    expect(other.get_by_role("button", name="Save")).to_have_count(0)
    reader.screenshot("web-workspace-settings-viewer")
    other.get_by_role("link", name="Team").click()
    other.wait_for_url(f"**/workspaces/{workspace}/team")
    expect(other.locator("tr.member")).to_have_count(2)
    expect(other.get_by_role("button", name="Add")).to_have_count(0)
    expect(other.get_by_role("button", name="Remove")).to_have_count(0)
    expect(other.get_by_role("combobox", name="Role of olga")).to_have_count(0)
    expect(other.get_by_test_id("role")).to_have_count(2)
    reader.screenshot("web-team-viewer")

    refused = viewer.patch(f"/api/v1/workspaces/{workspace}", json={"name": "Mine"})
    assert refused.status_code == 403 and refused.json()["error_code"] == "FORBIDDEN"
    team = mine["team_id"]
    added = viewer.post(f"/api/v1/teams/{team}/members", json={"email": "x@example.com"})
    assert added.status_code == 403 and added.json()["error_code"] == "FORBIDDEN"
    assert seen.foreign() == [] and reader.foreign() == []


def test_an_api_key_is_shown_once_works_and_is_refused_once_revoked(
    start_server: StartServer, visit: Callable[[str], Visit]
) -> None:
    server = start_server(None)
    seen = visit(server.url)
    page = seen.page
    register(seen, "keys@example.com")
    page.get_by_role("link", name="API keys").click()
    page.wait_for_url("**/api-keys")
    expect(page.get_by_text("No API keys yet")).to_be_visible()
    page.get_by_label("Name").fill("ci")
    page.locator("form").get_by_label("Role").select_option("viewer")
    page.get_by_role("button", name="Create key").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text("it will not be shown again")
    key = dialog.get_by_label("API key").input_value()
    assert key.startswith("tdk_"), key
    seen.screenshot("web-api-key-once")
    dialog.get_by_role("button", name="Done").click()
    expect(dialog).to_have_count(0)
    row = page.locator('tr.api-key[data-name="ci"]')
    expect(row).to_contain_text("viewer")
    expect(row).to_contain_text(key[:8])
    assert key not in page.content()  # shown once: gone from the page

    service = server.client(key)
    listed = service.get("/api/v1/workspaces/")
    assert listed.status_code == 200, listed.text
    assert [w["name"] for w in listed.json()["items"]] == ["Default"]
    page.reload()
    expect(row.get_by_test_id("uses")).to_have_text("1")
    seen.screenshot("web-api-keys")

    row.get_by_role("button", name="Revoke").click()
    page.get_by_role("dialog").get_by_role("button", name="Revoke").click()
    expect(row.get_by_test_id("revoked")).to_have_text("Revoked")
    refused = service.get("/api/v1/workspaces/")
    assert refused.status_code == 401, refused.text
    assert seen.foreign() == [], seen.foreign()
