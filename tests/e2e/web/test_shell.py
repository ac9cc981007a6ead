"""Register, sign out, come back to where you were after signing in; a 404 page."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from playwright.sync_api import expect

from tests.e2e.conftest import StartServer
from tests.e2e.web.conftest import Visit
from tests.e2e.web.helpers import PASSWORD, new_session, register

pytestmark = [pytest.mark.e2e]


def test_sign_in_goes_back_where_the_user_was_and_unknown_paths_are_not_found(
    start_server: StartServer, visit: Callable[[str], Visit]
) -> None:
    server = start_server(None)
    seen = visit(server.url)
    page = seen.page
    register(seen, "shell@example.com")
    sid = new_session(seen)

    page.get_by_role("button", name="Account menu").click()
    page.get_by_role("menuitem", name="Sign out").click()
    page.wait_for_url("**/signin")

    seen.go(f"/sessions/{sid}")  # signed out: sign-in, remembering where to go
    page.wait_for_url(re.compile(rf"/signin\?next=(/|%2F)sessions(/|%2F){sid}$"))
    page.get_by_label("Email").fill("shell@example.com")
    page.get_by_label("Password").fill("wrong password")
    page.get_by_role("button", name="Sign in").click()
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("INVALID_CREDENTIALS")  # the API's error_code, shown
    seen.screenshot("web-signin-error")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(f"**/sessions/{sid}")
    expect(page.get_by_test_id("sessions")).to_contain_text("New session")

    seen.go("/no/such/page")
    expect(page.get_by_role("heading", name="Page not found")).to_be_visible()
    assert seen.foreign() == []


def test_language_and_theme_are_switched_and_remembered(
    start_server: StartServer, visit: Callable[[str], Visit]
) -> None:
    server = start_server(None)
    seen = visit(server.url)
    page = seen.page
    register(seen, "prefs@example.com")
    page.get_by_role("button", name="Language").click()
    page.get_by_role("menuitemradio", name="简体中文").click()
    expect(page.get_by_role("button", name="新建会话")).to_be_visible()
    page.get_by_role("button", name="主题").click()
    page.get_by_role("menuitemradio", name="深色").click()
    expect(page.locator("html")).to_have_class("dark")
    page.reload()
    expect(page.get_by_role("button", name="新建会话")).to_be_visible()
    expect(page.locator("html")).to_have_class("dark")
    # Back to English for the picture (this machine may lack CJK fonts).
    page.get_by_role("button", name="语言").click()
    page.get_by_role("menuitemradio", name="English").click()
    expect(page.get_by_role("button", name="New session")).to_be_visible()
    expect(page.locator("html")).to_have_class("dark")
    seen.screenshot("web-home-dark")
