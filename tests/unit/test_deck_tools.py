"""The slide tools build and change a deck: every change is a new version of one
artifact, rendered from the deck's data; every version opens as a valid package; a bad
change is a kept failure that leaves the deck as it was; a replay makes the same files."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from pptx import Presentation

from domain.deck_fold import DeckHistory
from domain.session import AgentSession as S
from domain.values import artifact_id_of
from tests.fakes.engine import Engine, make_engine, scripted
from tests.unit.pptx_package import check_package
from tests.unit.test_replay_and_fork import call, replay_of

CHART = {
    "type": "column",
    "categories": ["2023", "2024", "2025"],
    "series": [
        {"name": "Revenue", "values": [1.5, 2.25, 4]},
        {"name": "Cost", "values": [1, 1, 2]},
    ],
}
SLIDES: list[dict[str, object]] = [
    {"title": "Quarterly review", "layout": "title", "body": "Q3 2026"},
    {"title": "Highlights", "bullets": ["Revenue up", "Churn down"], "notes": "Say it slowly."},
    {"title": "Revenue grew", "layout": "chart", "chart": CHART, "notes": "Figures from finance."},
    {"title": "Before and after", "layout": "two_column", "bullets": ["a", "b", "c", "d"]},
    {"title": "Thank you", "layout": "closing", "bullets": ["Questions?"]},
]


async def deck_session(tmp_path: Path, *turns: dict[str, object]) -> tuple[Engine, UUID]:
    engine = make_engine(scripted(*turns, {"text": "Done."}), tmp_path)
    sid = await engine.new_session(confirmation="never")
    await engine.scheduler.send_message(sid, "make a deck")
    assert await engine.scheduler.wait(sid) == "completed"
    return engine, sid


def create(template: str = "business", slides: list[dict[str, object]] = SLIDES) -> dict[str, Any]:
    return {"tool_calls": [call("create_deck", "c1", title="Q3 review", template=template,
                                slides=slides)]}  # fmt: skip


def results(engine: Engine, sid: UUID) -> dict[str, S.ToolResultRecorded]:
    return {
        e.tool_use_id: e for e in engine.events(sid, "ToolResultRecorded")
        if isinstance(e, S.ToolResultRecorded)
    }  # fmt: skip


async def versions(engine: Engine, sid: UUID) -> list[bytes]:
    """Every version's file, in order (the engine keeps its blobs under tmp_path)."""
    blobs = engine.runner.tool_calls.blobs
    history = DeckHistory.of(engine.sessions.session_events(sid))
    return [await blobs.get(e.blob_ref) for e in history.events(1)]


def slide_parts(data: bytes) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return {n: z.read(n) for n in z.namelist() if n.startswith("ppt/slides/slide")}


@pytest.mark.parametrize("template", ["business", "minimal", "creative"])
async def test_a_deck_built_through_the_tools_opens_with_its_slides(
    tmp_path: Path, template: str
) -> None:
    engine, sid = await deck_session(tmp_path, create(template))
    assert results(engine, sid)["c1"].status == "success"
    (data,) = await versions(engine, sid)
    check_package(data)
    deck = Presentation(io.BytesIO(data))
    assert [s.shapes.title.text if s.shapes.title else _title(s) for s in deck.slides] == [
        str(s["title"]) for s in SLIDES
    ]
    notes = [s.notes_slide.notes_text_frame.text if s.has_notes_slide else "" for s in deck.slides]
    assert notes[1] == "Say it slowly." and notes[2] == "Figures from finance."
    (chart,) = [sh.chart for sh in deck.slides[2].shapes if sh.has_chart]
    plot = chart.plots[0]
    assert list(plot.categories) == ["2023", "2024", "2025"]
    assert [(s.name, list(s.values)) for s in plot.series] == [
        ("Revenue", [1.5, 2.25, 4.0]), ("Cost", [1.0, 1.0, 2.0])
    ]  # fmt: skip
    (created,) = engine.events(sid, "DeckCreated")
    assert isinstance(created, S.DeckCreated) and created.template == template
    completed = engine.events(sid, "RunCompleted")[-1]
    assert isinstance(completed, S.RunCompleted)
    assert [a.artifact_id for a in completed.artifacts] == [
        artifact_id_of(sid, created.originator_version)
    ]


def _title(slide: Any) -> str:
    """The first text of a slide drawn without a title placeholder."""
    return next(
        sh.text_frame.text for sh in slide.shapes if sh.has_text_frame and sh.text_frame.text
    )


async def test_rewriting_slide_3_changes_slide_3_only(tmp_path: Path) -> None:
    shorter = {"title": "Revenue grew 2.7x", "layout": "chart", "chart": CHART}
    engine, sid = await deck_session(
        tmp_path,
        create(),
        {"tool_calls": [call("update_slide", "u1", deck=1, index=3, slide=shorter)]},
    )
    assert results(engine, sid)["u1"].status == "success", results(engine, sid)["u1"].error
    first, second = await versions(engine, sid)
    before, after = slide_parts(first), slide_parts(second)
    changed = {name for name in before if before[name] != after.get(name)}
    assert changed == {"ppt/slides/slide3.xml"}
    assert before.keys() == after.keys()
    # The earlier version is still there, as it was.
    check_package(first)


async def test_remove_add_and_reorder_keep_every_version_a_valid_package(tmp_path: Path) -> None:
    engine, sid = await deck_session(
        tmp_path,
        create(),
        {"tool_calls": [call("remove_slide", "r1", deck=1, index=2)]},
        {"tool_calls": [call("add_slide", "a1", deck=1, index=2, slide={"title": "Back"})]},
        {"tool_calls": [call("reorder_slides", "o1", deck=1, order=[5, 1, 2, 3, 4])]},
        {"tool_calls": [call("set_deck_template", "t1", deck=1, template="creative")]},
        {"tool_calls": [call("add_slide", "a2", deck=1, slide={"title": "Appendix"})]},
    )
    assert {k: r.status for k, r in results(engine, sid).items()} == dict.fromkeys(
        ["c1", "r1", "a1", "o1", "t1", "a2"], "success"
    )
    files = await versions(engine, sid)
    assert len(files) == 6
    for data in files:
        check_package(data)
    titles = [_titles(d) for d in files]
    assert titles[1] == ["Quarterly review", "Revenue grew", "Before and after", "Thank you"]
    assert titles[3][0] == "Thank you" and titles[3][2] == "Back"
    assert titles[5][-1] == "Appendix"
    assert (await replay_of(engine, sid)).identical


def _titles(data: bytes) -> list[str]:
    return [_title(s) for s in Presentation(io.BytesIO(data)).slides]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ({"deck": 1, "index": 9, "slide": {"title": "X"}}, "index 9 is out of range"),
        ({"deck": 2, "index": 1, "slide": {"title": "X"}}, "no deck 2"),
        ({"deck": 1, "index": 1, "slide": {"title": "   "}}, "needs a title"),
        ({"deck": 1, "index": 1, "slide": {"title": "X", "image": "not-ours"}}, "not an image"),
        (
            {"deck": 1, "index": 1, "slide": {"title": "X", "layout": "chart", "chart": {
                "type": "bar", "categories": ["a"], "series": [{"name": "s", "values": ["x"]}]}}},
            "Expected `float`",
        ),
    ],
)  # fmt: skip
async def test_a_bad_change_is_a_kept_failure_and_the_deck_stays(
    tmp_path: Path, args: dict[str, object], says: str
) -> None:
    engine, sid = await deck_session(
        tmp_path, create(), {"tool_calls": [call("update_slide", "u1", **args)]}
    )
    failed = results(engine, sid)["u1"]
    assert failed.status == "error" and says in (failed.error or "") + failed.summary, failed
    assert len(await versions(engine, sid)) == 1  # no new version


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ({"title": "D", "template": "neon", "slides": [{"title": "a"}]}, "neon"),
        ({"title": "D", "slides": []}, "length >= 1"),
    ],
)
async def test_a_bad_deck_is_refused(tmp_path: Path, args: dict[str, object], says: str) -> None:
    engine, sid = await deck_session(tmp_path, {"tool_calls": [call("create_deck", "c1", **args)]})
    failed = results(engine, sid)["c1"]
    assert failed.status == "error" and says in (failed.error or "") + failed.summary, failed
    assert engine.events(sid, "DeckCreated") == []


async def test_long_text_is_split_over_slides_never_cut(tmp_path: Path) -> None:
    words = [f"word{i}" for i in range(600)]
    long = {"title": "Everything", "bullets": [" ".join(words)]}
    engine, sid = await deck_session(tmp_path, create(slides=[SLIDES[0], long]))
    (data,) = await versions(engine, sid)
    deck = Presentation(io.BytesIO(data))
    assert len(deck.slides) > 2
    text = " ".join(sh.text_frame.text for s in deck.slides for sh in s.shapes if sh.has_text_frame)
    assert all(w in text.split() or w in text for w in words)
    assert "too long for one slide" in results(engine, sid)["c1"].summary
