"""A deck as data: slides check what they hold, and every version folds from the log."""

from __future__ import annotations

import pytest

from application.sessions import SessionService
from domain import decks
from domain.deck_fold import DeckHistory
from domain.decks import Chart, Slide
from domain.errors import InvalidCommand
from tests.unit.sse_check import deck_changes


def slide(**raw: object) -> Slide:
    return Slide.of({"title": "T", **raw})


def test_a_slide_round_trips_through_its_stored_shape() -> None:
    chart = {"type": "pie", "categories": ["a", "b"], "series": [{"name": "s", "values": [1, 2.5]}]}
    s = slide(bullets=["one", "two"], body="b", notes="n", layout="chart", chart=chart)
    assert Slide.of(s.to_json()) == s
    assert s.chart == Chart.of(chart)
    assert "s: a: 1, b: 2.5" in s.text()


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        ({"title": "  "}, "needs a title"),
        ({"title": "T", "layout": "grid"}, "layout must be one of"),
        ({"title": "T", "layout": "chart"}, "no chart data"),
        ({"title": "T", "layout": "image"}, "no image"),
        (
            {"title": "T", "chart": {"type": "bar", "categories": ["a"],
                                     "series": [{"name": "s", "values": ["many"]}]}},
            "not a number",
        ),
        (
            {"title": "T", "chart": {"type": "bar", "categories": ["a", "b"],
                                     "series": [{"name": "s", "values": [1]}]}},
            "one value per category",
        ),
        (
            {"title": "T", "chart": {"type": "bar", "categories": ["a"],
                                     "series": [{"name": "s", "values": [True]}]}},
            "not a number",
        ),
        ({"title": "T", "bullets": "not a list"}, "list of strings"),
    ],
)  # fmt: skip
def test_bad_slides_are_refused_saying_why(raw: dict[str, object], says: str) -> None:
    with pytest.raises(InvalidCommand, match=says):
        Slide.of(raw)


def test_a_deck_needs_a_known_template_and_a_slide() -> None:
    with pytest.raises(InvalidCommand, match="unknown template 'neon'"):
        decks.created(1, "D", "neon", [slide()], 2, "d.pptx")
    with pytest.raises(InvalidCommand, match="empty outline"):
        decks.created(1, "D", "minimal", [], 2, "d.pptx")


def test_changes_check_their_page() -> None:
    deck = decks.created(1, "D", "minimal", [slide(title="a"), slide(title="b")], 2, "d.pptx")
    with pytest.raises(InvalidCommand, match="index 3 is out of range"):
        decks.with_slide_rewritten(deck, 3, slide())
    with pytest.raises(InvalidCommand, match="exactly once"):
        decks.with_slides_reordered(deck, [1, 1])
    assert decks.with_slide_added(deck, 3, slide(title="c")).slides[2].title == "c"
    one = decks.with_slide_removed(deck, 1)
    with pytest.raises(InvalidCommand, match="one slide left"):
        decks.with_slide_removed(one, 1)


def test_every_version_of_a_deck_folds_from_the_log(sessions: SessionService) -> None:
    from uuid import uuid4

    sid = sessions.start_session(workspace_id=uuid4(), owner_id=uuid4(), title="t").session_id
    deck_changes(sessions, sid)
    history = DeckHistory.of(sessions.session_events(sid))
    versions = history.versions(1)
    titles = [[s.title for s in v.slides] for v in versions]
    assert titles == [
        ["Intro"], ["Intro", "Two"], ["Intro!", "Two"], ["Two", "Intro!"], ["Two", "Intro!"],
        ["Two"],
    ]  # fmt: skip
    assert [v.version for v in versions] == [1, 2, 3, 4, 5, 6]
    assert [v.template for v in versions][-2:] == ["minimal", "minimal"]
    assert [e.deck_version for e in history.events(1)] == [1, 2, 3, 4, 5, 6]
    assert history.next_number() == 2
    with pytest.raises(InvalidCommand, match="no deck 2"):
        history.current(2)


@pytest.fixture
def sessions() -> SessionService:
    from adapters.bootstrap.in_memory import in_memory_sessions

    return in_memory_sessions()
