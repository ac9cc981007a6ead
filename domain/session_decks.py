"""The slide-deck events of a session, as a base of the `AgentSession` aggregate.

A deck is created with its first slides and then changed a step at a time; each event
carries the change and the rendered file of the deck's new version (its blob), so the
version a user downloads is exactly what the log says. The deck itself is folded from
these events (`domain.deck_fold`). They are recorded as the session's own subclasses
(`domain.session_log` says how); match on them through `DeckLog` (`DeckLog.DeckEvent`
matches every one).
"""

from __future__ import annotations

from dataclasses import Field, fields
from decimal import Decimal
from typing import Any, NamedTuple

from eventsourcing.domain import Aggregate

from domain.conversation import CacheTtl, ModelTurn, Usage
from domain.decks import Deck, Slide, Template
from domain.session_log import SessionLog
from domain.values import ModelCallCost, RunArtifact, artifact_id_of


class File(NamedTuple):
    """A deck version's file, as every deck event has it (in this order)."""

    blob_ref: str
    size: int
    sha256: str
    tool_use_id: str | None  # the tool call that made it (None: a user's regeneration)


class DeckLog(SessionLog):
    """The deck events and the commands that record them (mixed into `AgentSession`)."""

    class DeckEvent(Aggregate.Event):
        """A deck's change: `deck` is its number in the session (from 1); the blob is
        the deck's new version rendered as PPTX, made by `tool_use_id` (None: by a user)."""

        deck: int
        created_at: int  # the session version of the deck's creation (its artifact id)
        deck_version: int  # the deck's version this change made (its artifact's), from 1
        name: str  # the deck's file name
        blob_ref: str
        size: int
        sha256: str
        tool_use_id: str | None

    class DeckCreated(DeckEvent):
        title: str
        template: Template
        slides: list[Slide]

        def apply(self, aggregate: Any) -> None:
            if aggregate.active_run is not None:  # what the run made, listed at its end
                made = RunArtifact(artifact_id_of(self.originator_id, self.created_at), "ppt",
                                   self.name)  # fmt: skip
                aggregate.run_artifacts.append(made)

    class SlideAdded(DeckEvent):
        index: int  # where it now stands, from 1
        slide: Slide

    class SlideRewritten(DeckEvent):
        """A slide replaced: by a tool, or regenerated from a user's instructions by one
        model call, whose usage and cost are recorded here (`model` "" when none)."""

        index: int
        slide: Slide
        instructions: str
        model: str
        input_tokens: int
        output_tokens: int
        cache_read_tokens: int
        cache_write_tokens: int
        cache_ttl: CacheTtl
        cost_usd: Decimal
        price_version: str
        priced: bool

    class SlideRemoved(DeckEvent):
        index: int

    class SlidesReordered(DeckEvent):
        order: list[int]  # the earlier index of each slide, in the new order

    class TemplateChanged(DeckEvent):
        template: Template

    def create_deck(
        self, deck: int, title: str, name: str, template: Template, slides: list[Slide], file: File
    ) -> None:
        self._check_open()
        made = dict(deck=deck, created_at=self.version + 1, deck_version=1, name=name)
        self._change(type(self).DeckCreated, made, file, title=title, template=template,
                     slides=list(slides))  # fmt: skip

    def add_slide(self, deck: Deck, index: int, slide: Slide, file: File) -> None:
        self._change(type(self).SlideAdded, _next(deck), file, index=index, slide=slide)

    def rewrite_slide(
        self,
        deck: Deck,
        index: int,
        slide: Slide,
        file: File,
        instructions: str = "",
        call: ModelTurn | None = None,
        cost: ModelCallCost | None = None,
    ) -> None:
        """Slide `index` replaced; by a model call (`call`, `cost`) when regenerated."""
        cost = cost or ModelCallCost(priced=True)
        usage = call.usage if call else Usage()
        self._change(
            type(self).SlideRewritten, _next(deck), file, index=index, slide=slide,
            instructions=instructions, model=call.model if call else "",
            input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens, cache_write_tokens=usage.cache_write_tokens,
            cache_ttl=cost.cache_ttl, cost_usd=cost.usd, price_version=cost.price_version,
            priced=cost.priced,
        )  # fmt: skip

    def remove_slide(self, deck: Deck, index: int, file: File) -> None:
        self._change(type(self).SlideRemoved, _next(deck), file, index=index)

    def reorder_slides(self, deck: Deck, order: list[int], file: File) -> None:
        self._change(type(self).SlidesReordered, _next(deck), file, order=list(order))

    def change_template(self, deck: Deck, template: Template, file: File) -> None:
        self._change(type(self).TemplateChanged, _next(deck), file, template=template)

    def repeat(self, e: SlideRewritten) -> None:
        """Record `e` again as it was (a replay repeats a user's regeneration)."""
        self._check_open()
        self.trigger_event(type(e), **{f.name: getattr(e, f.name) for f in _payload(e)})

    def _change(
        self, kind: type[DeckEvent], deck: dict[str, object], file: File, **change: object
    ) -> None:
        self._check_open()
        self.trigger_event(kind, **deck, **file._asdict(), **change)


def _next(deck: Deck) -> dict[str, object]:
    """What a change of `deck` records of it: number, creation, new version, file name."""
    return dict(
        deck=deck.number, created_at=deck.created_at, deck_version=deck.version + 1,
        name=deck.name,
    )  # fmt: skip


# Set by the store on every event; a repeated event gets its own.
_ENVELOPE = frozenset({"originator_id", "originator_version", "timestamp", "originator_topic"})


def _payload(e: Aggregate.Event) -> list[Field[Any]]:
    return [f for f in fields(e) if f.name not in _ENVELOPE]
