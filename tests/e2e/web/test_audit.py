"""The Audit screen: a finished chat's event log as a timeline (every event, its type,
filtered by type), the replay check run from the page (identical, with the event count),
a fork at an earlier version opening the new session's chat with the log up to there;
a viewer reads the log but gets no replay or fork, and the API refuses both."""

from __future__ import annotations

import re
from collections.abc import Callable

import httpx
import pytest
from playwright.sync_api import expect

from tests.e2e.chat_helpers import chat, new_session
from tests.e2e.client import sign_up
from tests.e2e.conftest import StartServer
from tests.e2e.web.conftest import Visit
from tests.e2e.web.helpers import sign_in, team_with_viewer

pytestmark = [pytest.mark.e2e]

QUESTION = "Tell me about heat pumps"


def stored(http: httpx.Client, sid: object) -> list[dict[str, object]]:
    page = http.get(f"/api/v1/sessions/{sid}/events", params={"limit": 1000})
    assert page.status_code == 200, page.text
    return list(page.json()["items"])


def test_a_finished_chat_audited_replayed_identically_and_forked_at_an_earlier_version(
    start_server: StartServer, visit: Callable[[str], Visit]
) -> None:
    server = start_server("chat")
    account = sign_up(server.client(), "audit@example.com")
    http = server.client(str(account["access_token"]))
    sid = new_session(http, account["workspace_id"])["id"]
    chat(http, sid, QUESTION)
    events = stored(http, sid)
    types = [str(e["type"]) for e in events]
    assert types[0] == "SessionStarted" and types[-1] == "RunCompleted", types

    seen = visit(server.url)
    page = seen.page
    sign_in(seen, f"/sessions/{sid}", "audit@example.com")
    expect(page.get_by_test_id("chat-log")).to_contain_text("three units of heat")
    page.get_by_test_id("audit-link").click()
    page.wait_for_url(f"**/sessions/{sid}/audit")

    rows = page.locator("tr.audit-event")
    expect(rows).to_have_count(len(events))
    assert rows.evaluate_all("rs => rs.map(r => r.dataset.type)") == types
    assert rows.evaluate_all("rs => rs.map(r => Number(r.dataset.version))") == list(
        range(1, len(events) + 1)
    )
    first = rows.first
    first.locator("summary").click()
    expect(first.locator("pre")).to_be_visible()
    expect(first.locator("pre")).to_contain_text('"title": "Heat pumps"')

    page.get_by_label("Type").select_option("AssistantTurnRecorded")
    expect(rows).to_have_count(types.count("AssistantTurnRecorded"))
    assert set(rows.evaluate_all("rs => rs.map(r => r.dataset.type)")) == {"AssistantTurnRecorded"}
    seen.screenshot("web-audit-filtered")
    page.get_by_label("Type").select_option("")
    expect(rows).to_have_count(len(events))

    page.get_by_role("button", name="Replay").click()
    result = page.get_by_test_id("replay-result")
    expect(result).to_have_attribute("data-identical", "true")
    expect(result).to_contain_text(f"{len(events)} events reproduced")
    seen.screenshot("web-audit-replay-identical")

    at = types.index("ToolResultRecorded") + 1  # after the first tool's result
    page.get_by_role("button", name=f"Fork at version {at}").click()
    page.wait_for_url(lambda url: "/sessions/" in str(url) and str(sid) not in str(url))
    forked = page.url.rsplit("/", 1)[-1]
    expect(page.get_by_test_id("chat-log")).to_be_visible()
    copy = stored(http, forked)
    # The log up to `at`, then the fork's own close of the run it cut (it stopped there).
    assert [e["type"] for e in copy] == [*types[:at], "RunStopped"], (at, types)
    assert [e["payload"] for e in copy[1:at]] == [e["payload"] for e in events[1:at]]
    assert copy[0]["payload"]["parent_id"] == sid  # type: ignore[index]
    assert copy[0]["payload"]["parent_version"] == at  # type: ignore[index]
    assert http.get(f"/api/v1/sessions/{forked}").json()["version"] == at + 1 < len(events)
    seen.screenshot("web-audit-forked-chat")

    page.emulate_media(color_scheme="dark")
    page.evaluate("document.documentElement.classList.add('dark')")
    seen.go(f"/sessions/{sid}/audit")
    expect(rows).to_have_count(len(events))
    expect(page.get_by_test_id("sessions").locator("li")).to_have_count(2)  # this and its fork
    page.evaluate("document.documentElement.classList.add('dark')")
    seen.screenshot("web-audit-dark")
    assert seen.foreign() == [], seen.foreign()


def test_a_viewer_reads_the_log_without_replay_or_fork_and_the_api_refuses_both(
    start_server: StartServer, visit: Callable[[str], Visit]
) -> None:
    server = start_server("chat")
    owner, viewer, workspace = team_with_viewer(server)
    sid = new_session(owner, workspace, confirmation="always")["id"]
    asked = chat(owner, sid, QUESTION, until=lambda e: e.event == "confirm_required")
    assert asked.events[-1].event == "confirm_required"  # the run waits: it is still active
    waiting = owner.post(f"/api/v1/sessions/{sid}/replay")
    assert waiting.status_code == 409, waiting.text
    assert waiting.json()["error_code"] == "CONFLICT"
    events = stored(owner, sid)

    seen = visit(server.url)
    page = seen.page
    sign_in(seen, f"/sessions/{sid}/audit", "vera@example.com")
    expect(page.locator("tr.audit-event")).to_have_count(len(events))
    assert page.get_by_role("button", name="Replay").count() == 0
    assert page.get_by_role("button", name=re.compile("^Fork at version")).count() == 0
    assert page.locator("tr.audit-event button").count() == 0
    seen.screenshot("web-audit-viewer")

    for path, body in (("replay", None), ("fork", {"at_version": 1})):
        refused = viewer.post(f"/api/v1/sessions/{sid}/{path}", json=body)
        assert refused.status_code == 403, (path, refused.text)
        assert refused.json()["error_code"] == "FORBIDDEN"
    assert seen.foreign() == [], seen.foreign()


def test_a_replay_on_an_engine_changed_since_the_run_shows_the_first_divergence(
    start_server: StartServer, visit: Callable[[str], Visit]
) -> None:
    first = start_server("chat")
    account = sign_up(first.client(), "change@example.com")
    sid = new_session(first.client(str(account["access_token"])), account["workspace_id"])["id"]
    chat(first.client(str(account["access_token"])), sid, QUESTION)
    first.stop()
    # The same log, served by an engine that now stops a run after one model turn: the
    # replay reproduces the first turn, then stops where the log went on.
    server = start_server("chat", extra_env={"TOKENDANCE_MAX_ITERATIONS": "1"})
    events = stored(server.client(str(account["access_token"])), sid)
    second_turn = [i for i, e in enumerate(events, 1) if e["type"] == "AssistantTurnRecorded"][1]

    seen = visit(server.url)
    page = seen.page
    sign_in(seen, f"/sessions/{sid}/audit", "change@example.com")
    page.get_by_label("Type").select_option("AssistantTurnRecorded")
    page.get_by_role("button", name="Replay").click()
    result = page.get_by_test_id("replay-result")
    expect(result).to_have_attribute("data-identical", "false")
    expect(result).to_contain_text(f"diverged at version {second_turn}")
    expect(result.get_by_test_id("expected")).to_contain_text("AssistantTurnRecorded")
    expect(result.get_by_test_id("got")).to_contain_text("max_iterations")
    marked = page.locator('tr.audit-event[aria-current="true"]')
    expect(marked).to_have_attribute("data-version", str(second_turn))
    expect(marked).to_be_in_viewport()
    expect(page.locator("tr.audit-event")).to_have_count(len(events))  # the filter cleared
    seen.screenshot("web-audit-replay-diverged")
    assert seen.foreign() == [], seen.foreign()
