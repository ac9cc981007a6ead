"""Decks in the chat view: a scripted run builds a three-slide deck, the preview shows its
slides as thumbnails (or says clearly that this server has no slide images), slide 2 is
regenerated from instructions through a scripted model answer (its stream watched until
it ends), version 2 is shown with its own thumbnails, and version 1 is switched back to
and downloaded."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable

import pytest
from playwright.sync_api import Response, expect

from tests.e2e.conftest import StartServer
from tests.e2e.web.conftest import Visit
from tests.e2e.web.helpers import new_session, register

pytestmark = [pytest.mark.e2e]

OFFICE = shutil.which("soffice") or shutil.which("libreoffice")
MISSING = "/nonexistent/soffice"
SLOW = 90_000  # LibreOffice renders a version's pages on first ask


@pytest.mark.parametrize("images", [True, False], ids=["libreoffice", "no-libreoffice"])
def test_a_deck_is_viewed_a_slide_regenerated_and_an_older_version_shown(
    start_server: StartServer, visit: Callable[[str], Visit], images: bool
) -> None:
    if images and not OFFICE:
        pytest.skip("LibreOffice is not installed (apt-get install libreoffice-impress)")
    # a server told of a soffice that does not exist has no slide images, as without one
    server = start_server("web_decks", extra_env={} if images else {"TOKENDANCE_SOFFICE": MISSING})
    seen = visit(server.url)

    def shot(name: str) -> None:  # the pictures with images; one without, named so
        if images:
            seen.screenshot(name)
        elif name == "web-deck":
            seen.screenshot("web-deck-no-images")

    page = seen.page
    answers: list[Response] = []
    page.on("response", lambda r: answers.append(r))
    register(seen, "decks@example.com")
    new_session(seen)
    page.get_by_placeholder("Ask the agent…").fill("Make me a deck on heat pumps")
    page.get_by_role("button", name="Send").click()
    panel = page.get_by_role("region", name="Artifacts")
    deck = panel.locator('.artifact[data-type="ppt"]')
    expect(deck).to_have_count(1)
    expect(deck).to_contain_text("v1")

    deck.get_by_role("button", name="Preview").click()
    dialog = page.get_by_role("dialog")
    slides = dialog.locator('[data-preview="ppt"]')
    expect(slides).to_have_attribute("data-version", "1")
    thumbs = dialog.locator(".thumb")
    expect(thumbs).to_have_count(3)
    if images:
        expect(thumbs.locator("img")).to_have_count(3, timeout=SLOW)
        expect(dialog.locator(".no-thumbnails")).to_have_count(0)
    else:  # no LibreOffice: each slide's text, and the page says why there are no images
        expect(dialog.locator(".no-thumbnails")).to_contain_text("Slide images are unavailable")
        expect(thumbs.nth(1)).to_contain_text("How they work")
    shot("web-deck")

    dialog.get_by_role("button", name="Slide 2", exact=True).click()
    expect(dialog.locator(".slide")).to_have_attribute("data-index", "2")
    big = dialog.locator(".slide img")
    before = big.screenshot() if images else b""
    dialog.get_by_label("Regenerate this slide (slide 2) with instructions").fill(
        "Say it in one line"
    )
    dialog.get_by_role("button", name="Regenerate slide 2").click()
    status = dialog.get_by_role("status")
    expect(status).to_contain_text("Regenerating slide 2…")  # the scripted answer waits 2 s
    expect(dialog.get_by_role("button", name="Regenerate slide 2")).to_be_disabled()
    shot("web-deck-regenerating")
    expect(status).to_contain_text("Slide 2 regenerated: now version 2", timeout=SLOW)
    # the stream's events were counted as they came
    expect(status).to_contain_text(re.compile(r"[1-9]\d* events? received"))
    asked = [a for a in answers if a.url.endswith("/regenerate")]
    assert [a.request.method for a in asked] == ["POST"], [a.url for a in asked]
    assert asked[0].headers["content-type"].startswith("text/event-stream")

    expect(slides).to_have_attribute("data-version", "2")
    expect(dialog.locator(".slide")).to_have_attribute("data-index", "2")  # still slide 2
    if images:
        expect(thumbs.locator("img")).to_have_count(3, timeout=SLOW)
        fresh = [a for a in answers if "/pages/2/thumbnail?version=2" in a.url]
        assert fresh, "version 2's slide 2 image was not fetched under its own URL"
        assert big.screenshot() != before, "slide 2's image did not change"
    else:
        expect(thumbs.nth(1)).to_contain_text("Moving heat, not making it")
    shot("web-deck-regenerated")

    picker = dialog.get_by_label("Version")
    expect(picker.locator("option")).to_have_count(2)
    picker.select_option("1")
    expect(slides).to_have_attribute("data-version", "1")
    # a regeneration rewrites the latest version: not offered on an older one
    expect(dialog.locator("form.regenerate")).to_have_count(0)
    expect(dialog.locator(".older-version")).to_contain_text("rewrites the latest (v2)")
    if images:
        expect(thumbs.locator("img")).to_have_count(3, timeout=SLOW)
    else:
        expect(thumbs.nth(1)).to_contain_text("How they work")
    with page.expect_download() as saved:
        dialog.get_by_role("button", name="Download v1").click()
    assert saved.value.suggested_filename.endswith(".pptx"), saved.value.suggested_filename
    fetched = [a for a in answers if "/download?version=1" in a.url]
    assert len(fetched) == 1 and fetched[0].status == 200, [a.url for a in fetched]
    shot("web-deck-version-1")

    page.emulate_media(color_scheme="dark")
    page.evaluate("document.documentElement.classList.add('dark')")
    shot("web-deck-dark")
    page.keyboard.press("Escape")
    expect(dialog).to_have_count(0)
    expect(deck).to_contain_text("v2")  # the panel's list was refreshed
    assert seen.foreign() == [], seen.foreign()
