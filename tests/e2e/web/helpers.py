"""Steps the web tests share: register through the page, start a session, a team
workspace with a viewer."""

from __future__ import annotations

import httpx
from playwright.sync_api import expect

from tests.e2e.client import Server, sign_up
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


def sign_in(visit: Visit, path: str, email: str) -> None:
    """Opens `path` signed out, signs in through the page and is taken back to it."""
    visit.go(path)
    page = visit.page
    page.get_by_label("Email").fill(email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_test_id("user-name")).to_be_visible()


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


def team_with_viewer(server: Server) -> tuple[httpx.Client, httpx.Client, str]:
    """olga owns team Research's workspace Papers, where vera is a viewer: their API clients
    (owner, viewer) and the workspace's id."""
    anon = server.client()
    owner = server.client(str(sign_up(anon, "olga@example.com")["access_token"]))
    viewer = server.client(str(sign_up(anon, "vera@example.com")["access_token"]))
    team = owner.post("/api/v1/teams/", json={"name": "Research"}).json()["id"]
    made = owner.post("/api/v1/workspaces/", json={"name": "Papers", "team_id": team})
    added = owner.post(
        f"/api/v1/teams/{team}/members", json={"email": "vera@example.com", "role": "viewer"}
    )
    assert added.status_code == 201, added.text
    return owner, viewer, str(made.json()["id"])
