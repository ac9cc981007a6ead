"""The Memory screen and chat attachments in the page, against a real serve.

Memories made through the API are listed (total, newest first), found by a search that
shows scores, edited, and one forgotten after a confirm (gone in the API too). The past
sessions tab finds a session by a word of its messages, marks the word, and opens its
chat. In a scripted chat a file attached with the paperclip uploads (its chip), is sent
with the message (shown on it, and listed with the stored message as its blob ref, which
is what the model's context names), and a file over the limit shows the server's 413.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

import pytest
from playwright.sync_api import expect

from tests.e2e.client import read_sse, wait_until
from tests.e2e.conftest import StartServer
from tests.e2e.test_workspace_files import user
from tests.e2e.web.conftest import Visit
from tests.e2e.web.helpers import PASSWORD, new_session, register, team_with_viewer

pytestmark = [pytest.mark.e2e]

MEMORIES = [
    ("The user prefers answers in metric units", "preference"),
    ("Tides at Brest are semidiurnal, two highs a day", "knowledge"),
    ("The user drinks espresso without sugar", "preference"),
]
NOTES = b"# Notes\n\nThe harbour opens at six.\n"


def test_memories_listed_searched_edited_forgotten_and_a_past_session_found(
    start_server: StartServer, visit: Callable[[str], Visit]
) -> None:
    server = start_server("replies")
    http, workspace, _ = user(server, "mem@example.com")
    made = {}
    for text, category in MEMORIES:
        answer = http.post("/api/v1/memories", json={"text": text, "category": category})
        assert answer.status_code == 201, answer.text
        made[text] = answer.json()["id"]
    session = http.post("/api/v1/sessions/", json={"workspace_id": workspace}).json()["id"]
    run = read_sse(
        http, "POST", f"/api/v1/chat/{session}/message",
        json={"content": "Which lighthouse guards the Ouessant strait?"},
    )  # fmt: skip
    assert run.status == 200 and run.of("done"), run.events
    wait_until(  # the memory keeper indexes the session's messages behind the run
        lambda: http.get("/api/v1/search", params={"q": "lighthouse"}).json()["items"],
        timeout=30,
    )

    seen = visit(server.url)
    page = seen.page
    seen.go("/memory")
    page.get_by_label("Email").fill("mem@example.com")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/memory")
    rows = page.locator("tr.memory")
    expect(rows).to_have_count(3)
    expect(page.get_by_test_id("memory-count")).to_have_text("3 memories")
    expect(rows.first).to_contain_text("espresso")  # newest first
    expect(rows.first).to_contain_text("personal")

    page.get_by_label("Search memories").fill("tides at Brest")
    page.get_by_role("button", name="Search memories").click()
    expect(page.get_by_test_id("memory-count")).to_contain_text("found for “tides at Brest”")
    expect(rows.first).to_contain_text("semidiurnal")
    expect(rows.first.locator(".memory-score")).to_have_text(re.compile(r"^\d\.\d{3}$"))
    seen.screenshot("web-memory-search")

    page.get_by_role("button", name="Show all").click()
    expect(rows).to_have_count(3)
    metric = rows.filter(has_text="metric units")
    metric.get_by_role("button", name="Edit").click()
    dialog = page.get_by_role("dialog", name="Edit memory")
    dialog.get_by_label("Memory").fill("The user prefers answers in SI units")
    dialog.get_by_role("button", name="Save").click()
    expect(dialog).to_be_hidden()
    expect(rows.filter(has_text="SI units")).to_have_count(1)
    edited = http.get(f"/api/v1/memories/{made[MEMORIES[0][0]]}").json()
    assert edited["text"] == "The user prefers answers in SI units"

    espresso = rows.filter(has_text="espresso")
    espresso.get_by_role("button", name="Delete").click()
    confirm = page.get_by_role("dialog", name="Forget this memory?")
    expect(confirm).to_contain_text("espresso")
    confirm.get_by_role("button", name="Forget").click()
    expect(rows).to_have_count(2)
    expect(page.get_by_test_id("memory-count")).to_have_text("2 memories")
    seen.screenshot("web-memory")
    gone = http.get(f"/api/v1/memories/{made[MEMORIES[2][0]]}")
    assert gone.status_code == 404, gone.text
    page.reload()
    expect(rows).to_have_count(2)

    page.get_by_role("tab", name="Past sessions").click()
    page.get_by_label("Search past sessions").fill("lighthouse")
    page.get_by_role("button", name="Search past sessions").click()
    hit = page.locator(f'.episode[data-session-id="{session}"]').first
    expect(hit.locator("mark").first).to_have_text("lighthouse")  # the server's match
    expect(hit).not_to_contain_text("**")
    seen.screenshot("web-memory-past-sessions")
    page.emulate_media(color_scheme="dark")  # the theme follows the system by default
    expect(page.locator("html")).to_have_class(re.compile(r"\bdark\b"))
    seen.screenshot("web-memory-dark")
    page.emulate_media(color_scheme="light")
    hit.get_by_role("link").click()
    page.wait_for_url(f"**/sessions/{session}")
    expect(page.get_by_test_id("chat-log")).to_contain_text("Ouessant strait")
    assert seen.foreign() == [], seen.foreign()


def test_a_file_attached_in_the_chat_is_sent_with_the_message(
    start_server: StartServer, visit: Callable[[str], Visit]
) -> None:
    server = start_server("replies")
    seen = visit(server.url)
    page = seen.page
    register(seen, "attach@example.com")
    session = new_session(seen)

    attach = page.get_by_label("Attach files")
    attach.set_input_files(
        files=[{"name": "big.bin", "mimeType": "application/octet-stream",
                "buffer": b"x" * (10 * 1024 * 1024 + 1)}]
    )  # fmt: skip
    toast = page.get_by_role("status").filter(has_text="Could not attach big.bin")
    expect(toast).to_contain_text("at most 10,485,760 bytes")
    expect(toast).to_contain_text("PAYLOAD_TOO_LARGE")
    toast.get_by_role("button").click()
    expect(toast).to_have_count(0)
    attach.set_input_files(
        files=[{"name": "notes.md", "mimeType": "text/markdown", "buffer": NOTES}]
    )
    form = page.get_by_test_id("chat-input")
    chip = form.locator(".attachment-chip")
    expect(chip).to_have_count(1)
    expect(chip).to_contain_text("notes.md")
    expect(chip).to_contain_text(f"{len(NOTES)} B")
    expect(chip.get_by_test_id("attachment-percent")).to_have_count(0)  # uploaded
    page.get_by_placeholder("Ask the agent…").fill("When does the harbour open?")
    seen.screenshot("web-chat-attachment")
    page.get_by_role("button", name="Send").click()

    log = page.get_by_test_id("chat-log")
    expect(log.locator(".run-done")).to_have_attribute("data-status", "completed")
    sent = log.locator('.chat-message[data-role="user"]')
    expect(sent.locator(".attachment-chip")).to_contain_text("notes.md")
    expect(chip).to_have_count(0)  # the input's chips went with the message
    seen.screenshot("web-chat-attachment-sent")

    token = page.evaluate("() => localStorage.getItem('td.access_token')")
    http = server.client(str(token))
    (stored,) = [m for m in http.get(f"/api/v1/sessions/{session}/messages").json()["items"]
                 if m["role"] == "user"]  # fmt: skip
    assert stored["attachments"] == [hashlib.sha256(NOTES).hexdigest()]
    page.reload()  # a reopened chat still shows the attachment, by its blob ref
    expect(sent.locator(".attachment-chip")).to_contain_text(hashlib.sha256(NOTES).hexdigest()[:12])
    page.keyboard.press("Alt+m")  # the Memory screen's shortcut
    page.wait_for_url("**/memory")
    expect(page.get_by_text("No memories yet")).to_be_visible()
    assert seen.foreign() == [], seen.foreign()


def test_a_viewer_gets_no_attachment_control_and_the_api_refuses_their_upload(
    start_server: StartServer, visit: Callable[[str], Visit]
) -> None:
    server = start_server(None)
    owner, viewer, workspace = team_with_viewer(server)
    sid = owner.post("/api/v1/sessions/", json={"workspace_id": workspace}).json()["id"]
    refused = viewer.post(f"/api/v1/sessions/{sid}/attachments", files={"file": ("a.md", NOTES)})
    assert refused.status_code == 403, refused.text

    seen = visit(server.url)
    page = seen.page
    seen.go(f"/sessions/{sid}")
    page.get_by_label("Email").fill("vera@example.com")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_test_id("viewer-note")).to_be_visible()
    assert page.get_by_label("Attach files").count() == 0
    assert page.get_by_test_id("chat-input").count() == 0
