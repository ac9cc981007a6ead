"""Skills: parsing SKILL.md (good and malformed), the registry, Level 3 files, matching."""

from __future__ import annotations

import logging
import math
from pathlib import Path
from uuid import uuid4

import pytest

from adapters.embeddings import HashingEmbedder, build_embedder
from application.ports import ToolExecutionError
from application.skills import (
    Skill,
    SkillError,
    SkillFileError,
    SkillMatcher,
    SkillRegistry,
    builtin_skills_dir,
    parse_skill,
    read_file,
)
from application.skills.service import Skills
from application.tools.base import ToolContext
from application.tools.skill_files import ReadSkillFile, ReadSkillFileArgs
from domain.values import Citation, PlanItem


def write_skill(root: Path, folder: str, front: str, body: str = "Do the thing.\n") -> Path:
    path = root / folder
    path.mkdir(parents=True)
    (path / "SKILL.md").write_text(f"---\n{front.strip()}\n---\n{body}", encoding="utf-8")
    return path


def builtin() -> SkillRegistry:
    return SkillRegistry.discover(builtin_skills_dir())


# Parsing ------------------------------------------------------------------------------


def test_the_built_in_deep_research_skill_loads_with_its_product_fields() -> None:
    skill = builtin().get("deep-research")

    assert skill is not None
    assert skill.display_name == "Deep Research"
    assert skill.author == "TokenDance"
    assert skill.version == "1.0.0"
    assert {"research", "调研", "研究", "market", "市场", "报告", "分析"} <= set(skill.tags)
    assert skill.allowed_tools is not None
    assert {"web_search", "read_url", "record_finding", "create_doc", "read_skill_file"} <= set(
        skill.allowed_tools
    )
    assert skill.max_iterations > 0 and skill.timeout > 0
    assert "create_doc" in skill.body and "---" not in skill.body.splitlines()[0]
    assert len(skill.instructions_sha256) == 64


def test_product_fields_are_read_leniently_from_the_top_level(tmp_path: Path) -> None:
    folder = write_skill(
        tmp_path,
        "ppt",
        """
name: ppt
description: Builds slide decks. Use when the user asks for a presentation.
display_name: PPT生成
version: 0.2.0
tags: [slides, 演示文稿]
allowed_tools: [create_doc, web_search]
max_iterations: 12
timeout: 90
""",
    )

    skill = parse_skill(folder)

    assert skill.display_name == "PPT生成"
    assert skill.tags == ("slides", "演示文稿")
    assert skill.allowed_tools == ("create_doc", "web_search")
    assert (skill.max_iterations, skill.timeout, skill.enabled) == (12, 90, True)


def test_the_spec_allowed_tools_field_is_space_separated(tmp_path: Path) -> None:
    folder = write_skill(
        tmp_path,
        "lint",
        "name: lint\ndescription: Lints code.\nallowed-tools: read_url  web_search",
    )

    skill = parse_skill(folder)

    assert skill.allowed_tools == ("read_url", "web_search")
    assert skill.display_name == "lint"  # defaults to the name


GOOD = "name: {name}\ndescription: Does a thing. Use it when asked."


@pytest.mark.parametrize(
    ("front", "field", "problem"),
    [
        (None, "front matter", "missing"),
        ("name: broken\ndescription: [unclosed", "front matter", "invalid YAML"),
        ("- just\n- a list", "front matter", "mapping"),
        ("name: other-name\ndescription: Fine.", "name", "does not match its folder"),
        ("name: Bad_Name\ndescription: Fine.", "name", "lowercase"),
        ("description: Fine.", "name", "missing"),
        ("name: {name}", "description", "missing"),
        ("name: {name}\ndescription: " + "x" * 1025, "description", "too long"),
        (GOOD + "\nmetadata:\n  max_iterations: lots", "max_iterations", "positive whole"),
        (GOOD + "\nmetadata: [a, b]", "metadata", "mapping"),
        (GOOD + "\ncompatibility: " + "y" * 501, "compatibility", "too long"),
    ],
)
def test_a_malformed_skill_is_skipped_with_a_warning_naming_file_and_problem(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, front: str | None, field: str, problem: str
) -> None:
    write_skill(tmp_path, "fine", GOOD.format(name="fine"))
    bad = tmp_path / "bad-skill"
    bad.mkdir()
    text = (
        "# no front matter\n" if front is None else f"---\n{front.format(name='bad-skill')}\n---\n"
    )
    (bad / "SKILL.md").write_text(text, encoding="utf-8")

    with caplog.at_level(logging.WARNING):
        registry = SkillRegistry.discover(tmp_path)

    assert registry.names == ["fine"]
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert str(bad / "SKILL.md") in warning
    assert f": {field}: " in warning
    assert problem in warning
    with pytest.raises(SkillError) as raised:
        parse_skill(bad)
    assert raised.value.field == field


def test_a_folder_without_skill_md_and_a_missing_root_are_skipped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "__pycache__").mkdir()

    with caplog.at_level(logging.WARNING):
        registry = SkillRegistry.discover(tmp_path, tmp_path / "nowhere", None)

    assert len(registry) == 0
    messages = [r.getMessage() for r in caplog.records]
    assert any("notes" in m and "SKILL.md" in m for m in messages)
    assert any("nowhere" in m for m in messages)
    assert not any("__pycache__" in m for m in messages)


# Registry -----------------------------------------------------------------------------


def test_an_underscore_name_finds_the_hyphenated_skill() -> None:
    registry = builtin()

    assert registry.get("deep_research") is registry.get("deep-research") is not None
    assert registry.get("Deep_Research ") is registry.get("deep-research")
    assert registry.get("no-such-skill") is None


def test_a_disabled_skill_is_not_loaded(tmp_path: Path) -> None:
    write_skill(tmp_path, "off", "name: off\ndescription: Off.\nmetadata:\n  enabled: 'false'")

    assert SkillRegistry.discover(tmp_path).get("off") is None


def test_a_skill_in_a_later_root_replaces_the_built_in_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_skill(tmp_path, "deep-research", "name: deep-research\ndescription: My own research.")

    with caplog.at_level(logging.WARNING):
        registry = SkillRegistry.discover(builtin_skills_dir(), tmp_path)

    skill = registry.get("deep-research")
    assert skill is not None and skill.description == "My own research."
    assert any("replaces" in r.getMessage() for r in caplog.records)


def test_the_catalog_has_one_line_per_enabled_skill_in_name_order(tmp_path: Path) -> None:
    write_skill(tmp_path, "zeta", "name: zeta\ndescription: Last one.")
    write_skill(tmp_path, "alpha", "name: alpha\ndescription: >\n  First one,\n  folded.")
    write_skill(tmp_path, "mid", "name: mid\ndescription: Hidden.\nenabled: false")

    catalog = SkillRegistry.discover(tmp_path).catalog_text()

    assert catalog == "- alpha: First one, folded.\n- zeta: Last one."


# Level 3 files ------------------------------------------------------------------------


@pytest.fixture
def confined_skill(tmp_path: Path) -> Skill:
    folder = write_skill(tmp_path / "skills", "demo", "name: demo\ndescription: Demo.")
    (folder / "references").mkdir()
    (folder / "references" / "guide.md").write_text("# Guide\n", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("outside", encoding="utf-8")
    (folder / "references" / "escape.md").symlink_to(tmp_path / "secret.txt")
    (folder / "linked").symlink_to(tmp_path)
    return parse_skill(folder)


def test_a_file_inside_the_skill_is_read(confined_skill: Skill) -> None:
    assert read_file(confined_skill, "references/guide.md") == "# Guide\n"
    assert read_file(confined_skill, "./references/guide.md") == "# Guide\n"


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("../secret.txt", "'..'"),
        ("references/../../secret.txt", "'..'"),
        ("/etc/passwd", "absolute"),
        ("references/escape.md", "outside the skill folder"),
        ("linked/secret.txt", "outside the skill folder"),
        ("references/missing.md", "has no file"),
        ("references", "is a folder"),
        ("", "give the path"),
    ],
)
def test_a_path_outside_the_skill_or_not_a_file_is_refused(
    confined_skill: Skill, path: str, problem: str
) -> None:
    with pytest.raises(SkillFileError, match=problem):
        read_file(confined_skill, path)


class NoNotes:
    """Session notes for a tool that writes none."""

    async def update_plan(self, items: list[PlanItem]) -> None:
        raise AssertionError("not expected")

    async def record_finding(self, text: str, citations: list[Citation]) -> None:
        raise AssertionError("not expected")

    async def note_progress(self, text: str) -> None:
        raise AssertionError("not expected")

    active: str | None = None

    async def active_skill(self) -> str | None:
        return self.active


async def test_read_skill_file_reads_from_the_active_skill_only(confined_skill: Skill) -> None:
    registry = SkillRegistry.discover(confined_skill.folder.parent)
    tool = ReadSkillFile(Skills(registry))
    notes = NoNotes()
    context = ToolContext(session_id=uuid4(), tool_use_id="t1", notes=notes)  # type: ignore[arg-type]

    with pytest.raises(ToolExecutionError, match="no skill is active"):
        await tool.run(ReadSkillFileArgs(path="references/guide.md"), context)

    notes.active = confined_skill.name
    assert await tool.run(ReadSkillFileArgs(path="references/guide.md"), context) == "# Guide\n"
    with pytest.raises(ToolExecutionError, match="leaves the skill folder"):
        await tool.run(ReadSkillFileArgs(path="../secret.txt"), context)


# Matching -----------------------------------------------------------------------------


@pytest.mark.parametrize("message", ["帮我调研AI Agent市场", "research the AI agent market"])
def test_the_seed_examples_pick_deep_research_by_keyword(message: str) -> None:
    matcher = SkillMatcher(builtin(), HashingEmbedder())

    match = matcher.match(message)

    assert match is not None
    assert (match.skill.name, match.by) == ("deep-research", "keyword")


@pytest.mark.parametrize("message", ["hello", "你好", "hi", "thanks", "Thank you!", "", "  "])
def test_small_talk_picks_no_skill(message: str) -> None:
    assert SkillMatcher(builtin(), HashingEmbedder(), threshold=-1.0).match(message) is None


def synthetic(tmp_path: Path) -> SkillRegistry:
    write_skill(
        tmp_path,
        "slides",
        "name: slides\ndescription: Builds presentation slide decks from an outline.\n"
        "metadata:\n  tags: 'ppt, 幻灯片'",
    )
    write_skill(
        tmp_path,
        "spreadsheets",
        "name: spreadsheets\ndescription: Cleans tabular spreadsheet data and charts it.\n"
        "metadata:\n  tags: 'excel, 表格, art'",
    )
    return SkillRegistry.discover(tmp_path)


def test_latin_keywords_match_whole_words_and_cjk_keywords_substrings(tmp_path: Path) -> None:
    matcher = SkillMatcher(synthetic(tmp_path), HashingEmbedder(), threshold=0.99)

    assert matcher.match("start the engine") is None  # "art" is not a word here
    by_cjk = matcher.match("帮我做一个幻灯片")
    assert by_cjk is not None and by_cjk.skill.name == "slides"
    by_plural = matcher.match("merge these two Excels please")
    assert by_plural is not None and by_plural.skill.name == "spreadsheets"
    assert by_plural.keywords == ("excel",)


def test_without_keywords_the_closest_description_above_threshold_wins(tmp_path: Path) -> None:
    registry = synthetic(tmp_path)
    matcher = SkillMatcher(registry, HashingEmbedder(), threshold=0.2)

    match = matcher.match("chart my tabular data")

    assert match is not None
    assert (match.skill.name, match.by) == ("spreadsheets", "embedding")
    assert 0.2 <= match.score <= 1.0
    strict = SkillMatcher(registry, HashingEmbedder(), threshold=0.95)
    assert strict.match("chart my tabular data") is None


def test_a_keyword_tie_goes_to_the_closer_description(tmp_path: Path) -> None:
    for name, description in [
        ("slides", "Builds presentation slide decks from an outline."),
        ("sheets", "Cleans tabular spreadsheet data and charts it."),
    ]:
        write_skill(tmp_path, name, f"name: {name}\ndescription: {description}\ntags: [report]")
    matcher = SkillMatcher(SkillRegistry.discover(tmp_path), HashingEmbedder())

    deck = matcher.match("a report as a presentation slide deck")
    data = matcher.match("a report that charts my tabular spreadsheet data")

    assert deck is not None and (deck.skill.name, deck.by) == ("slides", "keyword")
    assert data is not None and (data.skill.name, data.by) == ("sheets", "keyword")


def test_an_empty_registry_matches_nothing(tmp_path: Path) -> None:
    matcher = SkillMatcher(SkillRegistry([]), HashingEmbedder(), threshold=-1.0)

    assert matcher.match("research the AI agent market") is None


# The hashing embedder -----------------------------------------------------------------


def test_the_hashing_embedder_is_deterministic_and_normalized() -> None:
    embedder = build_embedder("hashing")
    a, b, c, empty = embedder.embed(["AI Agent 市场调研", "AI Agent 市场调研", "天气", ""])

    assert a == b and len(a) == embedder.dimension == 256
    assert math.isclose(sum(x * x for x in a), 1.0)
    assert a != c
    assert not any(empty)
    assert HashingEmbedder().embed(["AI Agent 市场调研"]) == [a]  # a stable hash, not hash()


def test_an_unknown_embedder_name_is_refused() -> None:
    with pytest.raises(ValueError, match="hashing, wordllama"):
        build_embedder("bert")
