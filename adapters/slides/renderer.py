"""The `SlideRenderer` port over `render_deck` (python-pptx)."""

from __future__ import annotations

from collections.abc import Mapping

from adapters.slides.render import render_deck
from domain.decks import Deck


class PptxRenderer:
    """Renders a deck version to PPTX bytes from its data alone."""

    def render(self, deck: Deck, images: Mapping[str, bytes]) -> bytes:
        return render_deck(deck, images)
