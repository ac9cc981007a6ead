"""The `SlideRenderer` port over `render_deck` (python-pptx)."""

from __future__ import annotations

from collections.abc import Mapping

from domain.decks import Deck


class PptxRenderer:
    """Renders a deck version to PPTX bytes from its data alone."""

    def render(self, deck: Deck, images: Mapping[str, bytes]) -> bytes:
        # python-pptx loads with the first deck (a third of a second): most processes
        # never render one, and `serve` starts that much sooner.
        from adapters.slides.render import render_deck

        return render_deck(deck, images)
