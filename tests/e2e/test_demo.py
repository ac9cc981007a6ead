"""`tokendance demo` and `tokendance replay` as a newcomer runs them."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def tokendance(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # No key of any kind: the demo must need none.
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("TOKENDANCE_", "ANTHROPIC_", "TAVILY_"))
    }
    return subprocess.run(
        [sys.executable, "-m", "adapters.cli", "--data-dir", str(data_dir), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def section(out: str, title: str) -> str:
    """The text under `== title ==`, up to the next section."""
    return out.split(f"== {title} ==\n", 1)[1].split("\n== ", 1)[0]


def test_the_demo_runs_a_research_session_shows_it_and_its_replay_matches(
    data_root: Path,
) -> None:
    data_dir = data_root / "demo"
    question = "Research: are heat pumps any good up north?"
    demo = tokendance(data_dir, "demo", "--question", question)
    assert demo.returncode == 0, demo.stderr
    out = demo.stdout
    assert f"user: {question}" in out
    assert re.search(rf"UserMessageAppended +{re.escape(repr(question))}", out)
    assert re.search(r"SkillActivated +deep-research [\d.]+ by keyword", out)
    assert "run ended: completed" in out
    for title in ("event stream", "task_plan.md", "findings.md", "progress.md", "sources",
                  "report artifact", "token usage", "answer", "replay"):  # fmt: skip
        assert f"== {title} ==" in out
    assert "- [x] Write the report" in section(out, "task_plan.md")

    # Three searches in one turn, two pages read: each page a numbered source.
    assert len(re.findall(r"ToolCallRequested +web_search ", out)) == 3
    assert len(re.findall(r"ToolCallRequested +read_url ", out)) == 2
    page = r"http://127\.0\.0\.1:\d+/pages/\S+"
    line = rf"^  \[(\d+)\] (.+) \(([a-z, ]+)\)\n      ({page})$"
    sources = re.findall(line, section(out, "sources"), re.MULTILINE)
    assert [int(n) for n, *_ in sources] == list(range(1, 8))
    assert [via for _, _, via, _ in sources] == ["search, read"] * 2 + ["search"] * 5
    assert sources[0][1].startswith("Cold-climate heat pumps in the lab")
    assert len({url for *_, url in sources}) == 7

    # The report: the file it is on disk (no user can download the demo's: its
    # workspace is nobody's), and its Sources section from those numbers.
    report = section(out, "report artifact")
    name = r"^  do-heat-pumps-work-in-cold-climates\.md: \d+ bytes, text/markdown"
    assert re.search(name, report, re.MULTILINE)
    written = data_dir / "demo-research" / "do-heat-pumps-work-in-cold-climates.md"
    assert f"  written: {written}\n" in report and "/api/v1/" not in out
    assert written.read_text().startswith("# Do heat pumps work in cold climates?")
    assert "    # Do heat pumps work in cold climates?" in report
    listed = re.findall(rf"^    \[(\d+)\] (.+) - ({page})$", report, re.MULTILINE)
    assert [(int(n), title, url) for n, title, url in listed] == [
        (int(n), title, url) for n, title, _, url in sources
    ]

    answer = section(out, "answer")
    assert answer.startswith("  Yes: modern cold-climate heat pumps work in cold climates.")
    assert re.findall(r"\[(\d)\]", answer) == ["1", "2", "6", "7"]
    cited = re.findall(r"^  \[(\d)\] (.+) - (\S+)$", section(out, "citations of the answer"), re.M)
    by_number = {int(n): (title, url) for n, title, _, url in sources}
    assert [int(n) for n, *_ in cited] == [1, 2, 6, 7]
    assert all(by_number[int(n)] == (title, url) for n, title, url in cited)
    assert re.search(r"RunCompleted +reason=end_turn tokens=\d+ made [\w-]+\.md", out)
    assert re.search(r"\d+ events reproduced identically", out)

    session_id = re.search(r"^session ([0-9a-f-]{36})$", out, re.MULTILINE)
    assert session_id is not None
    again = tokendance(data_dir, "replay", session_id.group(1))
    assert again.returncode == 0, again.stderr
    assert "reproduced identically" in again.stdout

    bad = tokendance(data_dir, "replay", "not-a-uuid")
    assert bad.returncode == 2 and "not a session id" in bad.stderr


def test_the_slides_demo_builds_revises_and_regenerates_a_deck(data_root: Path) -> None:
    data_dir = data_root / "demo-slides"
    demo = tokendance(data_dir, "demo", "--slides")
    assert demo.returncode == 0, demo.stderr + demo.stdout
    out = demo.stdout
    assert "run ended: completed" in out
    assert re.search(r"SkillActivated +slides [\d.]+ by keyword", out)
    assert re.search(r"DeckCreated +deck 1 'Heat pumps in cold climates': 6 slides, business", out)
    assert re.search(r"SlideRewritten +deck 1 version 2 ", out)  # update_slide
    assert re.search(r"SlideRewritten +deck 1 version 3 ", out)  # the regeneration
    deck = section(out, "deck 1: 'Heat pumps in cold climates' (3 versions)")
    assert "version 3: SlideRewritten, 6 slides" in deck
    assert "Efficiency falls with the cold, yet beats resistive heat" in deck
    assert "/api/v1/" not in out  # the deck's files are on disk, named below
    written = data_dir / "demo-slides" / "deck-1"
    assert (written / "deck.pptx").stat().st_size > 10_000
    if shutil.which("soffice"):
        assert sorted(p.name for p in written.glob("slide-*.png")) == [
            f"slide-{i}.png" for i in range(1, 7)
        ]
        assert (written / "deck.pdf").read_bytes().startswith(b"%PDF")
    assert "reproduced identically" in section(out, "replay")
