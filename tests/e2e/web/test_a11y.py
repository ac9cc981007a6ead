"""Accessibility of the main screens (axe-core in the page) and the chat by keyboard alone.

axe-core (bundled by `axe-playwright-python`) checks each screen against WCAG 2 A and AA
in light and dark; a serious or critical violation fails the test, naming the rule and
the elements. Every screen the sidebar lists is checked, so a new screen is covered
once it has its sidebar entry. The keyboard test sends a message, answers an approval
and reads a citation without the mouse.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import ExitStack

import pytest
from axe_playwright_python.sync_playwright import Axe
from playwright.sync_api import Page, expect

from tests.e2e.conftest import StartServer
from tests.e2e.web.conftest import Visit
from tests.e2e.web.helpers import new_session, register
from tests.e2e.web.test_chat import ANSWER, QUESTION
from tests.fakes.tavily_server import serve_fake_tavily

pytestmark = [pytest.mark.e2e]

AXE = Axe()
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]


def serious(page: Page) -> list[str]:
    """The serious and critical violations on the page, one line each."""
    found = AXE.run(page, options={"runOnly": {"type": "tag", "values": TAGS}})
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at "
        + ", ".join(" ".join(n["target"]) for n in v["nodes"][:5])
        for v in found.response["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def both_themes(page: Page, where: str) -> list[str]:
    """Violations in light and in dark, each named with where it was seen."""
    found: list[str] = []
    for theme in ("light", "dark"):
        page.emulate_media(color_scheme=theme)
        page.wait_for_timeout(150)  # the theme's transition (colours) settles
        found += [f"{where}, {theme}: {v}" for v in serious(page)]
    page.emulate_media(color_scheme="light")
    return found


@pytest.fixture
def stack() -> Iterator[ExitStack]:
    with ExitStack() as opened:
        yield opened


def answer_by_keyboard(page: Page) -> None:
    """Tabs to the message box, sends, approves, and waits for the run's end."""
    box = page.get_by_placeholder("Ask the agent…")
    for _ in range(60):  # Tab from wherever the page starts until the box has focus
        if box.evaluate("e => e === document.activeElement"):
            break
        page.keyboard.press("Tab")
    else:
        raise AssertionError("the message box is not reachable by Tab")
    page.keyboard.type(QUESTION)
    page.keyboard.press("Enter")
    dialog = page.get_by_role("dialog", name="Approval needed")
    expect(dialog).to_be_visible()
    focused = page.evaluate("document.activeElement?.closest('[role=dialog]') !== null")
    assert focused, "the approval dialog does not take the focus"
    approve = dialog.get_by_role("button", name="Approve")
    for _ in range(10):
        if approve.evaluate("e => e === document.activeElement"):
            break
        page.keyboard.press("Tab")
    else:
        raise AssertionError("Approve is not reachable by Tab inside the dialog")
    page.keyboard.press("Enter")
    expect(dialog).to_be_hidden()
    expect(page.locator(".run-done")).to_have_attribute("data-status", "completed")


def test_the_main_screens_have_no_serious_accessibility_violations_and_chat_works_by_keyboard(
    start_server: StartServer, visit: Callable[[str], Visit], stack: ExitStack
) -> None:
    tavily = stack.enter_context(serve_fake_tavily())
    server = start_server("web_chat", extra_env=tavily.server_env())
    seen = visit(server.url)
    page = seen.page
    found: list[str] = []

    seen.go("/signin")
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    found += both_themes(page, "sign-in")
    seen.go("/nowhere")
    expect(page.get_by_role("heading", name="Page not found")).to_be_visible()
    found += both_themes(page, "not found")

    register(seen, "a11y@example.com")
    found += both_themes(page, "home")
    new_session(seen)
    answer_by_keyboard(page)

    answer = page.locator(".chat-message", has_text=ANSWER)
    chip = answer.locator(".citation-chip").first
    chip.focus()
    page.keyboard.press("Enter")
    card = page.get_by_role("dialog")
    expect(card.get_by_role("link")).to_be_visible()
    found += both_themes(page, "citation card")
    page.keyboard.press("Escape")
    expect(card).to_be_hidden()
    found += both_themes(page, "chat")
    seen.screenshot("web-a11y-chat-by-keyboard")

    screens = page.get_by_test_id("screens").get_by_role("link")
    names = screens.all_inner_texts()
    assert names, "the sidebar lists no screens"
    for name in names:
        page.get_by_test_id("screens").get_by_role("link", name=name.strip()).click()
        page.wait_for_load_state("networkidle")
        found += both_themes(page, f"screen {name.strip()}")

    assert found == [], "\n".join(found)
    assert seen.foreign() == [], seen.foreign()
