"""A session's decks, folded from its deck events: every version of each deck.

`DeckHistory.apply` takes the events in order; `current(n)` is deck n now, and
`versions(n)` every version it had (version k is the deck after its k-th event), so
any version can be rendered again from the log alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TypeAlias, assert_never

from domain import decks
from domain.decks import Deck
from domain.errors import InvalidCommand
from domain.session_decks import DeckLog as D

DeckEvent: TypeAlias = (
    D.DeckCreated | D.SlideAdded | D.SlideRewritten | D.SlideRemoved | D.SlidesReordered
    | D.TemplateChanged
)  # fmt: skip
DECK_EVENTS = (
    D.DeckCreated, D.SlideAdded, D.SlideRewritten, D.SlideRemoved, D.SlidesReordered,
    D.TemplateChanged,
)  # fmt: skip


@dataclass
class DeckHistory:
    """Each deck of one session, with every version it had."""

    _versions: dict[int, list[Deck]] = field(default_factory=dict)
    _events: dict[int, list[DeckEvent]] = field(default_factory=dict)

    @classmethod
    def of(cls, events: Iterable[object]) -> DeckHistory:
        history = cls()
        for e in events:
            if isinstance(e, DECK_EVENTS):
                history.apply(e)
        return history

    def apply(self, e: DeckEvent) -> None:
        if isinstance(e, D.DeckCreated):
            deck = decks.created(e.deck, e.title, e.template, e.slides, e.created_at, e.name)
            self._versions[e.deck], self._events[e.deck] = [deck], [e]
            return
        deck = self.current(e.deck)
        match e:
            case D.SlideAdded(index=index, slide=slide):
                deck = decks.with_slide_added(deck, index, slide)
            case D.SlideRewritten(index=index, slide=slide):
                deck = decks.with_slide_rewritten(deck, index, slide)
            case D.SlideRemoved(index=index):
                deck = decks.with_slide_removed(deck, index)
            case D.SlidesReordered(order=order):
                deck = decks.with_slides_reordered(deck, order)
            case D.TemplateChanged(template=template):
                deck = decks.with_template(deck, template)
            case _:
                assert_never(e)
        self._versions[e.deck].append(deck)
        self._events[e.deck].append(e)

    @property
    def numbers(self) -> list[int]:
        return sorted(self._versions)

    def next_number(self) -> int:
        return max(self._versions, default=0) + 1

    def current(self, number: int) -> Deck:
        return self.versions(number)[-1]

    def versions(self, number: int) -> list[Deck]:
        if number not in self._versions:
            known = ", ".join(map(str, self.numbers)) or "none yet"
            raise InvalidCommand(f"the session has no deck {number} (its decks: {known})")
        return self._versions[number]

    def events(self, number: int) -> list[DeckEvent]:
        """The events of deck `number`; the k-th made its version k."""
        self.versions(number)
        return self._events[number]

    def by_created_at(self, version: int) -> Deck | None:
        """The deck created by the session's event at `version` (its artifact), now."""
        for number, versions in self._versions.items():
            if versions[0].created_at == version:
                return self.current(number)
        return None
