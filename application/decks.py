"""Changing a session's slide deck: the new version checked, fitted, rendered and kept.

Every change starts from the deck as the session's log has it (`DeckHistory`), makes
the next version as data, renders that version from scratch (never by editing an
earlier file), keeps the file in the blob store, and records the change with its file
in one write. A slide too long for its page is split over continuation slides (each
split is a change of its own, so every recorded version has its own file); nothing is
cut. A change that does not apply (a page out of range, an unknown template, an image
that is not the session's) raises `InvalidCommand` before anything is written.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol
from uuid import UUID

from application.ports import SlideRenderer
from application.receipt import Receipt
from application.tools.create_doc import slug
from domain import decks
from domain.deck_fold import DeckHistory
from domain.decks import PPTX, Deck, Slide, Template
from domain.errors import InvalidCommand
from domain.events import SessionEvent
from domain.session import AgentSession
from domain.session import AgentSession as S
from domain.session_decks import DeckLog as D
from domain.session_decks import File
from domain.slide_fit import split_to_fit
from domain.values import artifact_id_of

# Records one version of a deck, given its file.
Record = Callable[[AgentSession, File], None]


class DeckSession(Protocol):
    """The session a deck change is made in: its log, and how to write to it."""

    @property
    def session_id(self) -> UUID: ...

    @property
    def tool_use_id(self) -> str | None:
        """The tool call making the change (None: a user)."""
        ...

    async def events(self) -> Sequence[SessionEvent]:
        """The session's whole log, as of now."""
        ...

    async def record(self, command: Callable[[AgentSession], None]) -> Receipt:
        """Run `command` on the session and save what it recorded, in one write."""
        ...

    async def keep(self, data: bytes, media_type: str) -> str:
        """Keep `data` in the session's blob store; its blob ref."""
        ...

    async def stored(self, blob_ref: str) -> bytes:
        """What the blob store keeps under `blob_ref`."""
        ...


@dataclass(frozen=True)
class Step:
    """One version of a deck to render, and how to record it."""

    deck: Deck
    record: Record


@dataclass(frozen=True)
class Changed:
    """What a change made: the deck's latest version and the pages it wrote."""

    deck: Deck
    artifact_id: UUID
    pages: tuple[int, ...]  # the slides written (split slides give several)
    receipt: Receipt


class DeckEditor:
    """Makes deck changes in a `DeckSession`, rendering each version it records."""

    def __init__(self, renderer: SlideRenderer) -> None:
        self.renderer = renderer

    async def create(
        self, session: DeckSession, title: str, template: object, slides: Sequence[Slide]
    ) -> Changed:
        log = await session.events()
        fitted = [part for s in slides for part in split_to_fit(s)]
        number = DeckHistory.of(log).next_number()
        name = f"{slug(title)}.pptx"
        at = log[-1].originator_version + 1 if log else 1  # the version it is recorded at
        deck = decks.created(number, title, template, fitted, at, name)

        def record(s: AgentSession, file: File) -> None:
            s.create_deck(number, deck.title, name, deck.template, list(deck.slides), file)

        pages = tuple(range(1, len(deck.slides) + 1))
        return await self._apply(session, [Step(deck, record)], pages)

    async def add(
        self, session: DeckSession, number: int, index: int | None, slide: Slide
    ) -> Changed:
        deck = await self._current(session, number)
        at = len(deck.slides) + 1 if index is None else index
        deck.check_index(at, insert=True)
        return await self._insert(session, deck, at, split_to_fit(slide), [])

    async def rewrite(
        self,
        session: DeckSession,
        number: int,
        index: int,
        slide: Slide,
        rewrite: Callable[[AgentSession, Deck, int, Slide, File], None] | None = None,
    ) -> Changed:
        """Slide `index` replaced by `slide` (`rewrite` records it: a regeneration adds
        its model call); parts of a slide too long for a page follow it."""
        deck = await self._current(session, number)
        deck.check_index(index)
        first, *rest = split_to_fit(slide)
        after = decks.with_slide_rewritten(deck, index, first)
        write = rewrite or (lambda s, d, i, sl, f: s.rewrite_slide(d, i, sl, f))

        def record(s: AgentSession, file: File) -> None:
            write(s, deck, index, first, file)

        return await self._insert(session, after, index + 1, rest, [Step(after, record)])

    async def remove(self, session: DeckSession, number: int, index: int) -> Changed:
        deck = await self._current(session, number)
        after = decks.with_slide_removed(deck, index)
        step = Step(after, lambda s, file: s.remove_slide(deck, index, file))
        return await self._apply(session, [step], ())

    async def reorder(self, session: DeckSession, number: int, order: Sequence[int]) -> Changed:
        deck = await self._current(session, number)
        after = decks.with_slides_reordered(deck, order)
        step = Step(after, lambda s, file: s.reorder_slides(deck, list(order), file))
        return await self._apply(session, [step], ())

    async def change_template(self, session: DeckSession, number: int, template: object) -> Changed:
        deck = await self._current(session, number)
        after = decks.with_template(deck, template)
        checked: Template = after.template
        step = Step(after, lambda s, file: s.change_template(deck, checked, file))
        return await self._apply(session, [step], ())

    async def _current(self, session: DeckSession, number: int) -> Deck:
        return DeckHistory.of(await session.events()).current(number)

    async def _insert(
        self, session: DeckSession, deck: Deck, at: int, slides: Sequence[Slide], steps: list[Step]
    ) -> Changed:
        """`slides` added to `deck` from page `at` on, after `steps`, each a version."""
        pages = [at - 1] if steps else []
        for offset, slide in enumerate(slides):
            before, index = deck, at + offset
            deck = decks.with_slide_added(before, index, slide)
            steps.append(Step(deck, _adder(before, index, slide)))
            pages.append(index)
        return await self._apply(session, steps, tuple(pages))

    async def _apply(
        self, session: DeckSession, steps: list[Step], pages: tuple[int, ...]
    ) -> Changed:
        log = await session.events()
        files = [await self._file(session, step.deck, log) for step in steps]

        def command(s: AgentSession) -> None:
            for step, file in zip(steps, files, strict=True):
                step.record(s, file)

        receipt = await session.record(command)
        made = next(e for e in receipt.events if isinstance(e, D.DeckEvent))
        artifact_id = artifact_id_of(session.session_id, made.created_at)
        return Changed(steps[-1].deck, artifact_id, pages, receipt)

    async def _file(self, session: DeckSession, deck: Deck, log: Sequence[SessionEvent]) -> File:
        images = await self._images(session, deck, log)
        data = await asyncio.to_thread(self.renderer.render, deck, images)
        blob_ref = await session.keep(data, PPTX)
        return File(blob_ref, len(data), hashlib.sha256(data).hexdigest(), session.tool_use_id)

    async def _images(
        self, session: DeckSession, deck: Deck, log: Sequence[SessionEvent]
    ) -> dict[str, bytes]:
        """The deck's images: each an image artifact of this session, by its id."""
        wanted = {s.image for s in deck.slides if s.image is not None}
        if not wanted:
            return {}
        found = {
            str(artifact_id_of(session.session_id, e.originator_version)): e
            for e in log
            if isinstance(e, S.ArtifactCreated) and e.media_type.startswith("image/")
        }
        missing = sorted(wanted - found.keys())
        if missing:
            raise InvalidCommand(
                f"image {missing[0]} is not an image artifact of this session: give the id of "
                "an image this session made (for example a chart code_execute saved)"
            )
        return {ref: await session.stored(found[ref].blob_ref) for ref in sorted(wanted)}


def _adder(deck: Deck, index: int, slide: Slide) -> Record:
    return lambda s, file: s.add_slide(deck, index, slide, file)
