"""`tokendance demo --slides`: a slide deck built end to end, with a scripted model.

The scripted model (`scripts/slides.yaml`, unless `TOKENDANCE_LLM` names another)
outlines a deck, builds it with `create_deck`, tightens one slide with `update_slide`
and answers; then slide 3 is regenerated from a user's instructions (one model call),
as `POST /artifacts/{id}/regenerate` does. The demo prints the session's events, every
version of the deck, each slide's text, and, where LibreOffice is installed, writes the
PDF and a PNG thumbnail per slide next to the PPTX in the data directory.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from adapters.commands.demo import describe, print_replay, replay_events, run_session
from adapters.config.settings import Settings
from adapters.llm.scripted import BUNDLED_SCRIPTS
from adapters.slides.office import ConversionFailed, OfficeUnavailable
from adapters.system import Engine, System
from domain.deck_fold import DeckHistory
from domain.events import SessionEvent
from domain.session import AgentSession as S
from domain.values import artifact_id_of

SLIDES_QUESTION = (
    "Make a short deck (6 slides, business template) on whether heat pumps work in cold "
    "climates, for a general audience."
)
SLIDES_SCRIPT = BUNDLED_SCRIPTS / "slides.yaml"
REGENERATE = (3, "Make it shorter: three temperatures only.")


def slides_settings(settings: Settings) -> Settings:
    return settings.override(llm=settings.llm or f"scripted:{SLIDES_SCRIPT}")


async def run_slides_demo(system: System, question: str = SLIDES_QUESTION) -> bool:
    """Build, revise and regenerate a deck; print it; True if its replay is identical."""
    await system.services.start()
    try:
        return await _demo(system, question)
    finally:
        await system.stop()


async def _demo(system: System, question: str) -> bool:
    container, engine = system.container, system.engine
    session_id = await run_session(container, engine, question, task_type="slides")
    events = list(container.sessions.session_events(session_id))
    decks = DeckHistory.of(events)
    if not decks.numbers:
        print("the model made no deck")
        return False
    deck = decks.current(decks.numbers[0])
    artifact = next(e for e in events if isinstance(e, S.DeckCreated))
    artifact_id = artifact_id_of(session_id, artifact.created_at)
    page, instructions = REGENERATE
    print(f"user: regenerate slide {page} of {deck.title!r}: {instructions}")
    made = await engine.regenerator.regenerate(session_id, artifact_id, page, instructions)
    print(f"  -> version {made.deck.version}: {made.deck.slide(page).title!r}\n")
    events = list(container.sessions.session_events(session_id))
    print("== event stream ==")
    for e in events:
        print(describe(e))
    await _print_versions(engine, events, system.settings.data_dir / "demo-slides")
    report = await replay_events(engine, events)
    print_replay(report)
    return report.identical


async def _print_versions(engine: Engine, events: list[SessionEvent], into: Path) -> None:
    history = DeckHistory.of(events)
    for number in history.numbers:
        versions, made = history.versions(number), history.events(number)
        current = versions[-1]
        # Its files are written below: the API would answer 404 (the demo's session is
        # in a workspace of no user).
        print(f"\n== deck {number}: {current.title!r} ({len(versions)} versions) ==")
        for deck, e in zip(versions, made, strict=True):
            change = type(e).__qualname__.split(".")[-1]
            print(f"  version {deck.version}: {change}, {len(deck.slides)} slides, {e.size} bytes")
        for i, slide in enumerate(current.slides, 1):
            print(f"\n  [{i}] {slide.layout}\n{textwrap.indent(slide.text(), '      ')}")
        await _write_files(engine, made[-1].blob_ref, into / f"deck-{number}")


async def _write_files(engine: Engine, blob_ref: str, into: Path) -> None:
    into.mkdir(parents=True, exist_ok=True)
    (into / "deck.pptx").write_bytes(await engine.blobs.get(blob_ref))
    print(f"\n  written: {into / 'deck.pptx'}")
    reason = engine.previews.unavailable()
    if reason is not None:
        print(f"  no PDF or thumbnails: {reason}")
        return
    try:
        rendered = await engine.previews.rendered(blob_ref)
    except (OfficeUnavailable, ConversionFailed) as e:
        print(f"  no PDF or thumbnails: {e}")
        return
    (into / "deck.pdf").write_bytes(rendered.pdf)
    for i, png in enumerate(rendered.pages, 1):
        (into / f"slide-{i}.png").write_bytes(png)
    print(f"  written: deck.pdf and {len(rendered.pages)} thumbnails (slide-N.png)")
