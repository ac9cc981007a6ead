"""The slide-deck tools: create a deck, then add, rewrite, remove and reorder its slides.

A deck is named by its number in the session (1 for the first), which tools answer
with, along with its artifact id. Every change makes a new version of the deck's
artifact (same id; earlier versions stay downloadable), rendered from the deck's data.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Literal, TypeVar
from uuid import UUID

import msgspec
from msgspec import Meta

from application.decks import Changed, DeckEditor
from application.receipt import Receipt
from application.tools.base import AnyTool, Tool, ToolContext
from domain.decks import Slide
from domain.events import SessionEvent
from domain.session import AgentSession

Index = Annotated[int, Meta(ge=1, le=1000)]
DeckNumber = Annotated[int, Meta(ge=1, description="the deck's number in the session (1: first)")]


class SeriesIn(msgspec.Struct, forbid_unknown_fields=True):
    name: str
    values: list[float]


class ChartIn(msgspec.Struct, forbid_unknown_fields=True):
    type: Literal["bar", "column", "line", "pie"]
    categories: list[str]
    series: list[SeriesIn]


class SlideIn(msgspec.Struct, forbid_unknown_fields=True, omit_defaults=True):
    """One slide. Layouts: title, bullets, two_column, chart (needs `chart`), image
    (needs `image`: the artifact id of an image this session made), closing."""

    title: Annotated[str, Meta(min_length=1, max_length=200)]
    bullets: list[str] | None = None
    body: str | None = None
    notes: str | None = None  # speaker notes
    layout: Literal["title", "bullets", "two_column", "chart", "image", "closing"] | None = None
    chart: ChartIn | None = None
    image: str | None = None

    def slide(self) -> Slide:
        return Slide.of(msgspec.to_builtins(self))


class CreateDeckArgs(msgspec.Struct, forbid_unknown_fields=True):
    title: Annotated[str, Meta(min_length=1, max_length=200)]
    slides: Annotated[list[SlideIn], Meta(min_length=1, max_length=200)]
    template: Literal["business", "minimal", "creative"] = "business"


class UpdateSlideArgs(msgspec.Struct, forbid_unknown_fields=True):
    deck: DeckNumber
    index: Index
    slide: SlideIn


class AddSlideArgs(msgspec.Struct, forbid_unknown_fields=True):
    deck: DeckNumber
    slide: SlideIn
    index: Index | None = None  # where it goes (from 1); None: at the end


class RemoveSlideArgs(msgspec.Struct, forbid_unknown_fields=True):
    deck: DeckNumber
    index: Index


class ReorderSlidesArgs(msgspec.Struct, forbid_unknown_fields=True):
    deck: DeckNumber
    order: Annotated[list[Index], Meta(min_length=1)]


class SetDeckTemplateArgs(msgspec.Struct, forbid_unknown_fields=True):
    deck: DeckNumber
    template: Literal["business", "minimal", "creative"]


@dataclass(frozen=True)
class RunDeckSession:
    """The session a tool call runs in, as a deck change sees it."""

    context: ToolContext

    @property
    def session_id(self) -> UUID:
        return self.context.session_id

    @property
    def tool_use_id(self) -> str | None:
        return self.context.tool_use_id

    async def events(self) -> Sequence[SessionEvent]:
        return await self.context.notes.session_log()

    async def record(self, command: Callable[[AgentSession], None]) -> Receipt:
        return await self.context.notes.change_deck(command)

    async def keep(self, data: bytes, media_type: str) -> str:
        return await self.context.notes.keep(data, media_type)

    async def stored(self, blob_ref: str) -> bytes:
        return await self.context.notes.stored_text(blob_ref)


A = TypeVar("A", bound=msgspec.Struct)


class DeckTool(Tool[A]):
    """A deck tool: its editor, and how it reports a change."""

    replayable = True  # its only effects are a blob and an event, the same on a replay
    timeout = 120.0  # a long deck takes a while to render

    def __init__(self, editor: DeckEditor) -> None:
        self.editor = editor


class CreateDeck(DeckTool[CreateDeckArgs]):
    name = "create_deck"
    description = (
        "Create a slide deck (PPTX) the user can preview and download, from an outline the "
        "user confirmed: a title, a template (business, minimal or creative) and the slides, "
        "one idea each. Answers the deck's number, used by the other slide tools."
    )
    Args = CreateDeckArgs

    async def run(self, args: CreateDeckArgs, context: ToolContext) -> str:
        slides = [s.slide() for s in args.slides]
        made = await self.editor.create(RunDeckSession(context), args.title, args.template, slides)
        split = len(made.deck.slides) > len(slides)
        return report(made, f"created with {len(made.deck.slides)} slides", split=split)


class UpdateSlide(DeckTool[UpdateSlideArgs]):
    name = "update_slide"
    description = "Rewrite one slide of a deck (index from 1); the other slides stay as they are."
    Args = UpdateSlideArgs

    async def run(self, args: UpdateSlideArgs, context: ToolContext) -> str:
        session = RunDeckSession(context)
        made = await self.editor.rewrite(session, args.deck, args.index, args.slide.slide())
        return report(made, f"slide {args.index} rewritten")


class AddSlide(DeckTool[AddSlideArgs]):
    name = "add_slide"
    description = "Add a slide to a deck, at `index` (from 1) or at the end."
    Args = AddSlideArgs

    async def run(self, args: AddSlideArgs, context: ToolContext) -> str:
        session = RunDeckSession(context)
        made = await self.editor.add(session, args.deck, args.index, args.slide.slide())
        return report(made, f"slide added at {made.pages[0]}")


class RemoveSlide(DeckTool[RemoveSlideArgs]):
    name = "remove_slide"
    description = "Remove one slide (index from 1) from a deck."
    Args = RemoveSlideArgs

    async def run(self, args: RemoveSlideArgs, context: ToolContext) -> str:
        made = await self.editor.remove(RunDeckSession(context), args.deck, args.index)
        return report(made, f"slide {args.index} removed")


class ReorderSlides(DeckTool[ReorderSlidesArgs]):
    name = "reorder_slides"
    description = (
        "Reorder a deck's slides: `order` lists every slide's current index once, in the new "
        "order (for example [1, 3, 2])."
    )
    Args = ReorderSlidesArgs

    async def run(self, args: ReorderSlidesArgs, context: ToolContext) -> str:
        made = await self.editor.reorder(RunDeckSession(context), args.deck, args.order)
        return report(made, "slides reordered")


class SetDeckTemplate(DeckTool[SetDeckTemplateArgs]):
    name = "set_deck_template"
    description = "Change a deck's template: business, minimal or creative."
    Args = SetDeckTemplateArgs

    async def run(self, args: SetDeckTemplateArgs, context: ToolContext) -> str:
        session = RunDeckSession(context)
        made = await self.editor.change_template(session, args.deck, args.template)
        return report(made, f"template now {args.template}")


def deck_tools(editor: DeckEditor) -> list[AnyTool]:
    return [
        CreateDeck(editor), UpdateSlide(editor), AddSlide(editor), RemoveSlide(editor),
        ReorderSlides(editor), SetDeckTemplate(editor),
    ]  # fmt: skip


def report(made: Changed, what: str, *, split: bool | None = None) -> str:
    """What the model reads: the change, the deck's version and its slides now."""
    deck = made.deck
    lines = [
        f"deck {deck.number} {deck.title!r}: {what}; version {deck.version} "
        f"(artifact {made.artifact_id}, template {deck.template})."
    ]
    if split is None and len(made.pages) > 1:
        pages = ", ".join(map(str, made.pages))
        lines.append(f"The text was too long for one slide: it now spans slides {pages}.")
    elif split:
        lines.append(
            "Some text was too long for one slide: it continues on the next slide(s), "
            "titled '(1/2)', '(2/2)'."
        )
    lines.append("Slides:")
    lines += [f"{i}. [{s.layout}] {s.title}" for i, s in enumerate(deck.slides, 1)]
    return "\n".join(lines)
