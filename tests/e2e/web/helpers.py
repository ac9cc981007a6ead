"""Steps the web tests share: register through the page, start a session."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.e2e.web.conftest import Visit

PASSWORD = "correct horse battery"


def register(visit: Visit, email: str, name: str = "Ada") -> None:
    """Registers through the register page and lands signed in on the app."""
    visit.go("/register")
    page = visit.page
    page.get_by_label("Name").fill(name)
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Create account").click()
    expect(page.get_by_test_id("user-name")).to_have_text(name)


def new_session(visit: Visit) -> str:
    """Starts a session from the sidebar; its id, from the address it opens."""
    page = visit.page
    page.get_by_role("button", name="New session").click()
    try:
        page.wait_for_url("**/sessions/*")
    except Exception:
        page.screenshot(path="/tmp/newsession.png")
        raise
    expect(page.get_by_placeholder("Ask the agent…")).to_be_visible()
    return page.url.rsplit("/", 1)[-1]
