"""Text fitting: the size a box can show text at, and slides split so nothing is cut."""

from __future__ import annotations

import re

import pytest

from domain.decks import MAX_TITLE_CHARS, Chart, Slide
from domain.slide_fit import (
    BODY,
    CAPTION,
    COVER_SUBTITLE,
    LEFT_COLUMN,
    RIGHT_COLUMN,
    SIDE,
    Box,
    Para,
    columns,
    flow,
    font_size_for,
    split_to_fit,
    text_box,
)

SENTENCES = " ".join(
    f"Finding {i} shows that the regional teams grew their accounts by {i}% this quarter."
    for i in range(36)
)
LONG_BULLETS = tuple(
    f"Point {i}: the survey of customers in the northern region says delivery times "
    f"improved, though support waits grew, as noted in appendix {i}"
    for i in range(30)
)
CHART = Chart.of({"type": "bar", "categories": ["a", "b"], "series": [{"values": [1, 2]}]})


def words(text: str) -> list[str]:
    return text.split()


def said(slides: list[Slide]) -> list[str]:
    """Every word the slides' bodies and bullets say, in reading order."""
    return [w for s in slides for p in flow(s) for w in words(p.text)]


def said_apart(slides: list[Slide]) -> tuple[list[str], list[str]]:
    """The words of the slides' bodies, and those of their bullets."""
    body = [w for s in slides for w in words(s.body)]
    return body, [w for s in slides for b in s.bullets for w in words(b)]


def fits(slide: Slide) -> bool:
    if slide.layout == "two_column":
        left, right = columns(slide)
        return LEFT_COLUMN.size_for(left) is not None and RIGHT_COLUMN.size_for(right) is not None
    return text_box(slide).size_for(flow(slide)) is not None


def test_short_text_gets_the_largest_size() -> None:
    assert font_size_for(["Revenue grew"], 11.6, 5.0, max_pt=28, min_pt=14) == 28


def test_more_text_never_gets_a_larger_size() -> None:
    sizes = [
        font_size_for(["word " * n], 11.6, 5.0, max_pt=28, min_pt=6) for n in (10, 100, 300, 600)
    ]
    assert all(s is not None for s in sizes)
    assert sizes == sorted(sizes, reverse=True)  # type: ignore[type-var]
    assert sizes[0] == 28 and sizes[-1] is not None and sizes[-1] < 28


def test_text_too_long_at_the_smallest_size_has_no_size() -> None:
    assert font_size_for(["word " * 5000], 11.6, 5.0, max_pt=28, min_pt=14) is None


@pytest.mark.parametrize("n", [1, 5, 50, 300, 900])
def test_a_chosen_size_is_within_the_bounds_and_fits_where_one_larger_does_not(n: int) -> None:
    text = ["A line of ordinary words " * n]
    size = font_size_for(text, 5.0, 4.0, max_pt=30, min_pt=10)
    if size is None:
        assert font_size_for(text, 5.0, 4.0, max_pt=10, min_pt=10) is None
        return
    assert 10 <= size <= 30
    if size < 30:
        assert font_size_for(text, 5.0, 4.0, max_pt=30, min_pt=size + 1) is None


def test_wide_characters_take_more_room_than_latin_ones() -> None:
    latin = font_size_for(["abcdefghij" * 30], 6.0, 2.0, max_pt=40, min_pt=6)
    cjk = font_size_for(["日本語のテキスト表示" * 30], 6.0, 2.0, max_pt=40, min_pt=6)
    assert latin is not None and cjk is not None and cjk < latin


def test_bullets_take_more_room_than_plain_paragraphs() -> None:
    text = "measure " * 80
    plain = font_size_for([Para(text)], 4.0, 3.0, max_pt=40, min_pt=4)
    bullet = font_size_for([Para(text, bullet=True)], 4.0, 3.0, max_pt=40, min_pt=4)
    assert plain is not None and bullet is not None and bullet <= plain


def test_a_slide_that_fits_is_kept_as_it_is() -> None:
    slide = Slide("Highlights", bullets=("Revenue grew", "Costs held"), notes="n")
    assert split_to_fit(slide) == [slide]


def test_a_3000_character_bullet_is_split_over_numbered_slides_and_nothing_is_cut() -> None:
    assert 2800 < len(SENTENCES) < 3200
    slide = Slide("Findings", bullets=(SENTENCES,), notes="speak slowly")
    parts = split_to_fit(slide)
    assert len(parts) > 1
    assert [p.title for p in parts] == [f"Findings ({i}/{len(parts)})" for i in range(1, 11)][
        : len(parts)
    ]
    assert said(parts) == words(SENTENCES)
    assert all(fits(p) for p in parts)
    assert [p.notes for p in parts] == ["speak slowly"] + [""] * (len(parts) - 1)
    assert all(p.layout == "bullets" for p in parts)
    # broken at sentence ends: every piece ends a sentence
    assert all(b.endswith(".") for p in parts for b in p.bullets)


def test_thirty_long_bullets_are_shared_out_whole_and_evenly() -> None:
    parts = split_to_fit(Slide("Survey", bullets=LONG_BULLETS))
    assert len(parts) > 1
    assert [b for p in parts for b in p.bullets] == list(LONG_BULLETS)  # whole, in order
    assert all(fits(p) for p in parts)
    counts = [len(p.bullets) for p in parts]
    assert max(counts) - min(counts) <= 1


def test_a_long_body_is_split_at_paragraphs_first() -> None:
    paragraphs = [f"Paragraph {i}. " + SENTENCES[:400].strip() for i in range(20)]
    parts = split_to_fit(Slide("Story", body="\n".join(paragraphs)))
    assert len(parts) > 1
    assert [line for p in parts for line in p.body.splitlines()] == paragraphs
    assert all(fits(p) for p in parts)


def test_a_word_too_long_for_a_slide_is_broken_and_kept_whole_in_order() -> None:
    word = "x" * 12_000
    parts = split_to_fit(Slide("Hash", bullets=(word,)))
    assert len(parts) > 1
    assert "".join(b for p in parts for b in p.bullets) == word
    assert all(fits(p) for p in parts)


@pytest.mark.parametrize(
    "slide",
    [
        Slide("Both", body=SENTENCES, bullets=LONG_BULLETS, layout="two_column"),
        Slide("Bullets", bullets=LONG_BULLETS * 2, layout="two_column"),
        Slide("Body", body=SENTENCES * 3, layout="two_column"),
        Slide("Chart", bullets=LONG_BULLETS, layout="chart", chart=CHART),
        Slide("Image", bullets=LONG_BULLETS, layout="image", image="img"),
        Slide("Cover", body=SENTENCES, layout="title"),
        Slide("End", bullets=LONG_BULLETS, layout="closing"),
    ],
    ids=lambda s: s.layout,
)
def test_every_layout_splits_without_losing_a_word(slide: Slide) -> None:
    parts = split_to_fit(slide)
    assert len(parts) > 1
    assert said_apart(parts) == said_apart([slide])
    assert all(fits(p) for p in parts)
    assert all(split_to_fit(p) == [p] for p in parts)  # a part is split no further
    assert {(p.layout, p.chart, p.image) for p in parts} == {
        (slide.layout, slide.chart, slide.image)
    }


def test_continuation_slides_read_back_as_stored_even_with_the_longest_title() -> None:
    title = ("Quarterly " * 30)[:MAX_TITLE_CHARS].strip()
    parts = split_to_fit(Slide(title, bullets=LONG_BULLETS, notes="n"))
    assert len(parts) > 1
    assert all(Slide.of(p.to_json()) == p for p in parts)
    assert all(re.search(r" \(\d+/\d+\)$", p.title) for p in parts)


def test_two_columns_hold_the_body_left_and_the_bullets_right() -> None:
    left, right = columns(Slide("T", body="Context", bullets=("a", "b", "c"), layout="two_column"))
    assert left == (Para("Context"),)
    assert right == tuple(Para(b, bullet=True) for b in "abc")


def test_bullets_alone_are_shared_evenly_over_two_columns() -> None:
    left, right = columns(Slide("T", bullets=("a", "b", "c", "d", "e"), layout="two_column"))
    assert [p.text for p in left] == ["a", "b", "c"]
    assert [p.text for p in right] == ["d", "e"]


def test_an_image_caption_too_long_for_the_caption_goes_beside_the_image() -> None:
    short = Slide("I", body="A chart of sales", layout="image", image="i")
    long = Slide("I", bullets=LONG_BULLETS[:5], layout="image", image="i")
    assert text_box(short) == CAPTION
    assert text_box(long) == SIDE


@pytest.mark.parametrize("box", [BODY, LEFT_COLUMN, SIDE, CAPTION, COVER_SUBTITLE])
def test_boxes_stay_on_the_slide(box: Box) -> None:
    assert box.left >= 0 and box.left + box.width <= 13.34
    assert box.top >= 0 and box.top + box.height <= 7.5
    assert box.min_pt <= box.max_pt
