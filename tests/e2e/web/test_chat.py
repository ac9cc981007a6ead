"""A chat in the page: thinking, a tool call's states, an approval given in the
ConfirmDialog after a reload mid-run, citations, the answer once and `done`."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from contextlib import ExitStack

import pytest
from playwright.sync_api import Locator, expect

from tests.e2e.client import wait_until
from tests.e2e.conftest import StartServer, script_path
from tests.e2e.web.conftest import Visit
from tests.e2e.web.helpers import new_session, register
from tests.fakes.tavily_server import serve_fake_tavily

pytestmark = [pytest.mark.e2e]

FIRST = "Let me record what I found."
QUESTION = "Tell me about heat pumps"
ANSWER = "Heat pumps deliver about three units of heat per unit of electricity"


def ask_until_approval(seen: Visit) -> tuple[Locator, Locator]:
    """Sends the question; (the chat log, the ConfirmDialog) once it asks to delete."""
    page = seen.page
    page.get_by_placeholder("Ask the agent…").fill(QUESTION)
    page.get_by_role("button", name="Send").click()
    dialog = page.get_by_role("dialog", name="Approval needed")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("delete_file")
    return page.get_by_test_id("chat-log"), dialog


def shown_once(log: Locator, *texts: str) -> None:
    """Each text in exactly one message, and no message shown twice."""
    shown = log.locator(".chat-message .message-content").all_inner_texts()
    for text in texts:
        assert sum(text in t for t in shown) == 1, (text, shown)
    ids = [i for i in log.locator(".chat-message").evaluate_all(
        "els => els.map(e => e.dataset.messageId)") if i]  # fmt: skip
    assert len(ids) == len(set(ids)) == len(shown), ids
    assert log.locator(".run-done").count() == 1


@pytest.fixture
def stack() -> Iterator[ExitStack]:
    with ExitStack() as opened:
        yield opened


def test_a_chat_goes_through_an_approval_after_a_reload_showing_everything_once(
    start_server: StartServer, visit: Callable[[str], Visit], stack: ExitStack
) -> None:
    tavily = stack.enter_context(serve_fake_tavily())
    server = start_server("web_chat", extra_env=tavily.server_env())
    seen = visit(server.url)
    page = seen.page
    register(seen, "chat@example.com")
    new_session(seen)

    log, dialog = ask_until_approval(seen)
    expect(log.locator(".thinking").first).to_be_visible()
    expect(log.locator('.tool-call[data-tool-id="toolu_delete"]')).to_have_attribute(
        "data-status", "pending"
    )

    page.reload()  # mid-run: the history, the pending approval, nothing twice
    dialog = page.get_by_role("dialog", name="Approval needed")
    expect(dialog).to_be_visible()
    seen.screenshot("web-chat-approval")
    dialog.get_by_role("button", name="Approve").click()
    expect(dialog).to_be_hidden()

    done = log.locator(".run-done")
    expect(done).to_have_attribute("data-status", "completed")
    delete = log.locator('.tool-call[data-tool-id="toolu_delete"]')
    expect(delete).to_have_attribute("data-status", "success")
    expect(delete).to_have_attribute("data-trail", "pending running success")
    expect(log.locator('.tool-call[data-tool-id="toolu_find"]')).to_have_attribute(
        "data-status", "success"
    )

    shown_once(log, ANSWER, FIRST, QUESTION)

    answer = log.locator(".chat-message", has_text=ANSWER)
    answer.locator(".citation-chip").first.click()  # [1]: the search's first result
    card = page.get_by_role("dialog")
    expect(card.get_by_role("link")).to_have_attribute("href", re.compile(r"^https?://"))
    seen.screenshot("web-chat-citation")
    page.keyboard.press("Escape")
    seen.screenshot("web-chat")
    assert seen.foreign() == [], seen.foreign()


def test_a_stream_cut_by_a_server_restart_resumes_in_the_page_without_a_repeat_or_a_gap(
    start_server: StartServer, visit: Callable[[str], Visit], stack: ExitStack
) -> None:
    tavily = stack.enter_context(serve_fake_tavily())
    server = start_server("web_chat", extra_env=tavily.server_env())
    seen = visit(server.url)
    register(seen, "restart@example.com")
    sid = new_session(seen)
    log, dialog = ask_until_approval(seen)

    # The page goes offline and the server restarts: its stream is cut. Meanwhile
    # another client approves and the run ends; back online, the page must resume from
    # its Last-Event-ID and show all it missed, once.
    page = seen.page
    resumed: list[str | None] = []  # the Last-Event-ID of each session stream asked for
    page.on(
        "request",
        lambda r: (
            resumed.append(r.headers.get("last-event-id")) if r.url.endswith("/stream") else None
        ),
    )
    page.context.set_offline(True)
    server.stop()
    server.script = script_path("after_approval")
    server.start()
    token = page.evaluate("localStorage.getItem('td.access_token')")
    with server.client(token) as other:
        action = other.get(f"/api/v1/sessions/{sid}/hitl/pending").json()[0]["request_id"]
        answered = other.post(
            f"/api/v1/chat/{sid}/confirm", json={"action_id": action, "confirmed": True}
        )
        assert answered.status_code == 200, answered.text
        wait_until(lambda: "Noted, after the restart." in other.get(
            f"/api/v1/sessions/{sid}/messages").text, timeout=30)  # fmt: skip
    expect(dialog).to_be_visible()  # offline: the page has not heard yet
    page.context.set_offline(False)
    expect(dialog).to_be_hidden()  # the resumed stream's `confirmed` closes it
    assert resumed and all(i is not None and int(i) > 0 for i in resumed), resumed

    expect(log.locator(".run-done")).to_have_attribute("data-status", "completed")
    expect(log.locator('.tool-call[data-tool-id="toolu_delete"]')).to_have_attribute(
        "data-status", "success"
    )
    shown_once(log, QUESTION, FIRST, "Now I remove my scratch file.", "Noted, after the restart.")
    seen.screenshot("web-chat-resumed")
    assert seen.foreign() == [], seen.foreign()


def test_the_stop_button_stops_the_run(
    start_server: StartServer, visit: Callable[[str], Visit]
) -> None:
    server = start_server("slow")
    seen = visit(server.url)
    page = seen.page
    register(seen, "stop@example.com")
    new_session(seen)
    page.get_by_placeholder("Ask the agent…").fill("Take your time")
    page.get_by_role("button", name="Send").click()
    log = page.get_by_test_id("chat-log")
    asked = log.locator('.chat-message[data-role="user"]')
    expect(asked).not_to_have_attribute("data-message-id", "")  # stored: the run is on
    page.get_by_role("button", name="Stop").click()
    expect(log.locator(".run-done")).to_have_attribute("data-status", "stopped")
    expect(page.get_by_role("button", name="Stop")).to_be_hidden()
    assert "This answer comes too late." not in log.inner_text()
    seen.screenshot("web-chat-stopped")
