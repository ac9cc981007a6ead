"""The Usage screen against a real `serve` with the scripted model (`budget.yaml`: each
call costs 0.012225 USD on the priced claude-sonnet-5-5): the chart's total is what
GET /usage says, the table and the CSV download hold the API's rows, a workspace budget
set from the page shows as a bar, with the alerts the next run raised, and the API's
refusal of a bad budget is shown with its code."""

from __future__ import annotations

import csv
import io
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from playwright.sync_api import Locator, Page, expect

from tests.e2e.client import Server, read_sse, settled, sign_up
from tests.e2e.conftest import StartServer
from tests.e2e.web.conftest import Visit
from tests.e2e.web.helpers import sign_in
from tests.e2e.web.test_a11y import both_themes

pytestmark = [pytest.mark.e2e]


def chat(http: httpx.Client, session: object, text: str) -> None:
    read = read_sse(http, "POST", f"/api/v1/chat/{session}/message", json={"content": text})
    assert read.status == 200, read.body
    assert read.events[-1].event == "done", [e.event for e in read.events]


def open_usage(
    visit: Callable[[str], Visit], server: Server, http: httpx.Client, email: str, cost: str
) -> tuple[Visit, Locator]:
    """Once the read models have every call, GET /usage totals `cost`, and so does the Usage
    screen `email` signs in to: the visit, and today's bar in its chart."""
    settled(http)
    report = http.get("/api/v1/usage").json()
    assert report["totals"]["cost_usd"] == cost, report
    seen = visit(server.url)
    sign_in(seen, "/usage", email)
    expect(seen.page.get_by_test_id("total-cost")).to_have_text(f"${cost}")
    today = datetime.now(UTC).date().isoformat()
    return seen, seen.page.locator(f'g.day[data-day="{today}"]')


def exported_csv(page: Page, http: httpx.Client, group_by: str) -> tuple[str, str]:
    """Exports the page's CSV, checks it holds the rows of the API's own CSV for `group_by`,
    and answers its text and the file's name."""
    with page.expect_download() as saved:
        page.get_by_role("button", name="Export CSV").click()
    got = saved.value.path().read_text(encoding="utf-8")
    api_csv = http.get(
        "/api/v1/usage", params={"group_by": group_by}, headers={"Accept": "text/csv"}
    ).text
    assert list(csv.reader(io.StringIO(got))) == list(csv.reader(io.StringIO(api_csv)))
    return got, saved.value.suggested_filename


def test_usage_chart_csv_and_a_budget_with_its_alerts(
    start_server: StartServer, visit: Callable[[str], Visit]
) -> None:
    server = start_server("budget", extra_env={"TOKENDANCE_MAX_TOKENS": "100"})
    account = sign_up(server.client(), "usage@example.com")
    http = server.client(str(account["access_token"]))
    # One tool offered: the worst case of a call (what a budget check reserves) stays small.
    only = {"allowed_tools": ["note_progress"]}
    made = http.post(
        "/api/v1/sessions/", json={"workspace_id": account["workspace_id"], "settings": only}
    )
    session = made.json()["id"]
    chat(http, session, "one")
    chat(http, session, "two")
    seen, bar = open_usage(visit, server, http, "usage@example.com", "0.024450")
    page = seen.page
    today = datetime.now(UTC).date().isoformat()
    expect(bar).to_have_attribute("aria-label", f"{today}: $0.02445")
    expect(bar.locator("rect")).to_have_count(2)  # the hover area and one model's segment
    expect(page.get_by_role("list", name="Legend")).to_have_text("claude-sonnet-5-5")
    bar.focus()
    expect(page.get_by_test_id("chart-tooltip")).to_contain_text("claude-sonnet-5-5: $0.02445")
    rows = page.locator("tr.usage-row")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("0.024450")
    seen.screenshot("web-usage")

    # The CSV holds the rows shown, as the API's own CSV has them.
    assert exported_csv(page, http, "day,model")[1].endswith("-by-model.csv")

    # Tokens: the axis and the bar change with the toggle (3,800 tokens a call).
    page.get_by_role("button", name="Tokens", exact=True).click()
    expect(bar).to_have_attribute("aria-label", f"{today}: 7,600")

    # A bad budget: the API's refusal, with its code, in the page.
    budgets = page.get_by_role("region", name="Budgets")
    budgets.get_by_label("Monthly USD").fill("0.04")
    budgets.get_by_label("Alert thresholds (%)").fill("0")
    budgets.get_by_role("button", name="Set budget").click()
    expect(budgets.get_by_role("alert")).to_contain_text("VALIDATION_ERROR")
    # A low one: its bar at 61%, then the next run crosses 50% and 80% of it.
    budgets.get_by_label("Alert thresholds (%)").fill("50, 80, 100")
    budgets.get_by_role("button", name="Set budget").click()
    item = budgets.locator("li.budget")
    expect(item).to_contain_text("$0.024450 of $0.040000")
    expect(item.locator("[data-level]")).to_have_text("61%")
    expect(budgets.get_by_role("alert")).to_have_count(0)
    chat(http, session, "three")
    settled(http)
    page.reload()
    expect(item.locator("[data-level]")).to_have_text("92%")
    expect(item.locator("[data-level]")).to_have_attribute("data-level", "warn")
    alerts = page.get_by_test_id("budget-alerts")
    expect(alerts.locator("li.alert-row")).to_have_count(2)
    expect(alerts).to_contain_text("50% of Workspace · Default: $0.036675 spent, limit $0.040000")
    expect(alerts).to_contain_text("80% of Workspace")
    budgets.scroll_into_view_if_needed()
    seen.screenshot("web-usage-budgets")
    assert both_themes(page, "usage with a chart and a budget") == []
    assert seen.foreign() == [], seen.foreign()
    page.emulate_media(color_scheme="dark")
    page.get_by_role("heading", name="Usage").scroll_into_view_if_needed()
    seen.screenshot("web-usage-dark")

    # Removed from the page, gone on the server too.
    item.get_by_role("button", name="Remove").click()
    expect(item).to_have_count(0)
    assert http.get("/api/v1/budgets").json()["items"] == []


def test_usage_stacked_by_workspace_and_member_over_a_chosen_range(
    start_server: StartServer, visit: Callable[[str], Visit]
) -> None:
    """olga chats in her Default workspace and in team workspace Papers, bob (a member of
    the team) in Papers: olga, the owner, sees each day stacked by workspace or member
    with their names, the CSV by member equal to the API's, and her one call of a model
    the price table lacks flagged; bob sees his own usage only;
    a shorter range redraws the chart with its days."""
    server = start_server("budget")
    anon = server.client()
    olga_account = sign_up(anon, "olga@example.com")
    olga = server.client(str(olga_account["access_token"]))
    bob = server.client(str(sign_up(anon, "bob@example.com")["access_token"]))
    team = olga.post("/api/v1/teams/", json={"name": "Research"}).json()["id"]
    papers = olga.post("/api/v1/workspaces/", json={"name": "Papers", "team_id": team}).json()
    added = olga.post(
        f"/api/v1/teams/{team}/members", json={"email": "bob@example.com", "role": "member"}
    )
    assert added.status_code == 201, added.text
    for http, workspace, model in (
        (olga, olga_account["workspace_id"], None),
        (olga, papers["id"], None),
        (bob, papers["id"], None),
        (olga, olga_account["workspace_id"], "no-such-price-1"),  # unpriced: costs 0
    ):
        body = {"workspace_id": workspace, "settings": {"model": model}}
        made = http.post("/api/v1/sessions/", json=body)
        assert made.status_code == 201, made.text
        chat(http, made.json()["id"], "hello")
    seen, bar = open_usage(visit, server, olga, "olga@example.com", "0.036675")
    page = seen.page
    today = datetime.now(UTC).date().isoformat()
    legend = page.get_by_role("list", name="Legend")
    tooltip = page.get_by_test_id("chart-tooltip")

    page.get_by_label("Stack by").select_option(label="Workspace")
    expect(legend.get_by_role("listitem")).to_have_text(["Papers", "Default"])
    expect(bar.locator("rect")).to_have_count(3)  # the hover area and two workspaces
    bar.focus()
    expect(tooltip).to_contain_text("Papers: $0.02445")
    expect(tooltip).to_contain_text("Default: $0.012225")
    expect(page.locator("tr.usage-row")).to_have_count(2)
    expect(page.get_by_test_id("unpriced")).to_have_text(
        "1 call was of a model without a price: its cost counts as 0."
    )
    expect(page.locator("tr.usage-row", has_text="Default")).to_contain_text("2 (1 unpriced)")
    seen.screenshot("web-usage-by-workspace")

    page.get_by_label("Stack by").select_option(label="Member")
    expect(legend.get_by_role("listitem")).to_have_text(["You", "bob"])
    bar.focus()
    expect(tooltip).to_contain_text("You: $0.02445")
    expect(tooltip).to_contain_text("bob: $0.012225")
    got, name = exported_csv(page, olga, "day,user")
    assert got.startswith("day,user_id,") and name.endswith("-by-user.csv"), (got, name)

    # The range: seven days, then today alone; the chart is redrawn with those days.
    page.get_by_role("button", name="Last 7 days").click()
    expect(page.get_by_role("button", name="Last 7 days")).to_have_attribute("aria-pressed", "true")
    expect(page.locator("g.day")).to_have_count(7)
    # The days are one tab stop, today's; the arrow keys, Home and End move among them.
    expect(page.locator('g.day[tabindex="0"]')).to_have_attribute("data-day", today)
    bar.focus()
    page.keyboard.press("ArrowLeft")
    yesterday = (datetime.now(UTC).date() - timedelta(days=1)).isoformat()
    expect(tooltip).to_contain_text(f"{yesterday} · $0")
    page.keyboard.press("Home")
    expect(page.locator("g.day").first).to_be_focused()
    page.keyboard.press("End")
    expect(bar).to_be_focused()
    expect(page.locator('g.day[tabindex="0"]')).to_have_count(1)
    page.get_by_label("From").fill(today)
    expect(page.locator("g.day")).to_have_count(1)
    expect(bar).to_have_attribute("aria-label", f"{today}: $0.036675")
    expect(page.get_by_role("button", name="Last 7 days")).to_have_attribute(
        "aria-pressed", "false"
    )
    assert seen.foreign() == [], seen.foreign()

    # bob, a member in olga's team, sees his own usage alone.
    theirs, _ = open_usage(visit, server, bob, "bob@example.com", "0.012225")
    expect(theirs.page.locator("tr.usage-row")).to_have_count(1)
