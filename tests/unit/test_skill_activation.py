"""Skills in a session: matched to a user's message, activated as an event whose
instructions join the conversation (never the system prompt), their tools enforced,
kept through compaction; or taken up by the model with `activate_skill`."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

from domain.context import ContextBuilder, ContextFrame
from domain.session import AgentSession as S
from tests.fakes.engine import make_engine, scripted
from tests.unit.test_replay_and_fork import call, replay_of


async def test_a_matching_message_activates_the_skill_and_keeps_the_prefix(
    tmp_path: Path,
) -> None:
    llm = scripted(
        {"text": "Hello! What shall we look into?"},
        {"tool_calls": [call("delete_file", "d1", path="/tmp/x")]},
        {"text": "I will research it with searches instead."},
    )
    engine = make_engine(llm, tmp_path)
    sid = await engine.new_session(confirmation="never")
    await engine.scheduler.send_message(sid, "hello")
    assert await engine.scheduler.wait(sid) == "completed"
    assert not engine.events(sid, "SkillActivated"), "small talk picks no skill"

    await engine.scheduler.send_message(sid, "research the AI agent market")
    assert await engine.scheduler.wait(sid) == "completed"
    (activated,) = engine.events(sid, "SkillActivated")
    assert isinstance(activated, S.SkillActivated)
    assert (activated.name, activated.by) == ("deep-research", "keyword")
    assert activated.allowed_tools and "web_search" in activated.allowed_tools

    first, second = llm.requests[0], llm.requests[1]
    assert "deep-research:" in first.system, "the catalog (Level 1) is in the system prompt"
    assert second.system == first.system and second.tools == first.tools
    # Everything the first request said is still said, byte for byte, at the start.
    assert second.messages[: len(first.messages) - 1] == first.messages[:-1]
    assert any("[Skill activated: deep-research]" in str(b) for b in second.messages[-1].content)

    results = engine.events(sid, "ToolResultRecorded")
    refused = results[-1]
    assert isinstance(refused, S.ToolResultRecorded) and refused.status == "error"
    assert "not allowed while the skill deep-research is active" in (refused.error or "")
    report = await replay_of(engine, sid)
    assert report.identical, report.divergence


async def test_the_model_can_take_up_a_skill_and_read_its_files(tmp_path: Path) -> None:
    llm = scripted(
        {
            "tool_calls": [
                {"name": "activate_skill", "id": "a1", "input": {"name": "deep_research"}}
            ]
        },
        {"tool_calls": [call("read_skill_file", "f1", path="references/report-template.md")]},
        {"text": "Ready."},
    )
    engine = make_engine(llm, tmp_path)
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "hi")
    assert await engine.scheduler.wait(sid) == "completed"
    (activated,) = engine.events(sid, "SkillActivated")
    assert isinstance(activated, S.SkillActivated) and activated.by == "tool"
    results = {
        e.tool_use_id: e for e in engine.events(sid, "ToolResultRecorded")
        if isinstance(e, S.ToolResultRecorded)
    }  # fmt: skip
    assert results["a1"].summary.startswith("[Skill activated: deep-research]")
    assert results["f1"].status == "success" and results["f1"].summary


def test_compaction_keeps_the_active_skills_instructions() -> None:
    from uuid import uuid4

    from application.sessions import SessionService
    from domain.values import SkillSpec

    app = SessionService()
    sid = app.start_session(workspace_id=uuid4(), owner_id=uuid4(), title="t").session_id
    app.append_user_message(sid, "research heat pumps")
    app.activate_skill(sid, SkillSpec("deep-research", "1", "ALWAYS CITE."), 2.0, "keyword")
    app.append_user_message(sid, "and their costs")
    builder = ContextBuilder(ContextFrame("system", ()))
    for e in app.session_events(sid):
        builder.apply(e)  # type: ignore[arg-type]
    builder.compact("they were researched", through_version=3)
    said = " ".join(str(m.content) for m in builder.conversation())
    assert "ALWAYS CITE." in said and "they were researched" in said


class SteppingClock:
    """A clock that moves `step` forward each time it is read."""

    def __init__(self, step: timedelta) -> None:
        self.now, self.step = datetime.now(UTC), step

    def __call__(self) -> datetime:
        self.now += self.step
        return self.now


async def test_a_skills_timeout_bounds_each_run_not_the_session(tmp_path: Path) -> None:
    """deep-research allows 30 minutes: a run that goes past them ends with
    `skill_timeout`, and the session's next run, hours after the skill was taken up,
    still gets its own 30 minutes (the skill stays active, as its iterations do)."""
    llm = scripted(
        {"text": "I will research it."},
        {"text": "Here is the summary."},
        {"tool_calls": [call("note_progress", "n1", text="searched")]},
        {"text": "never asked for: the skill's time is up"},
    )
    engine = make_engine(llm, tmp_path)
    engine.runner.clock = SteppingClock(timedelta(minutes=20))  # each check: 20 minutes on
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "research the AI agent market")
    assert await engine.scheduler.wait(sid) == "completed"
    assert len(engine.events(sid, "SkillActivated")) == 1

    await engine.scheduler.send_message(sid, "now sum it up")  # an hour of clock later
    assert await engine.scheduler.wait(sid) == "completed"
    await engine.scheduler.send_message(sid, "and look further")
    assert await engine.scheduler.wait(sid) == "completed"

    reasons = [e.reason for e in engine.events(sid, "RunCompleted")]  # type: ignore[attr-defined]
    assert reasons == ["end_turn", "end_turn", "skill_timeout"]
    assert len(llm.requests) == 3  # the third run's tool ran; no turn after the time was up
    (noted,) = engine.events(sid, "ToolResultRecorded")
    assert isinstance(noted, S.ToolResultRecorded) and noted.status == "success"
    # Replay reads the time from the log: the run ended on its skill's time there, at
    # once, with no clock moved, and only there.
    report = await replay_of(engine, sid)
    assert report.identical, report.divergence


TAKE_UP = {"name": "deep-research"}  # the other spelling finds it too
# Seed 004's example SKILL.md, its front matter verbatim.
SEED_004_SKILL = Path(__file__).parents[1] / "fixtures" / "seed_skills" / "deep_research"


async def test_seed_004s_own_deep_research_example_loads_and_activates(tmp_path: Path) -> None:
    folder = tmp_path / "skills" / "deep_research"
    (folder / "resources").mkdir(parents=True)
    shutil.copy(SEED_004_SKILL / "SKILL.md", folder / "SKILL.md")
    (folder / "resources" / "search.py").write_text("print('searching')\n", encoding="utf-8")
    llm = scripted(
        {"tool_calls": [{"name": "activate_skill", "id": "a1", "input": TAKE_UP}]},
        {"tool_calls": [call("read_skill_file", "f1", path="resources/search.py")]},
        {"text": "Ready."},
    )
    engine = make_engine(llm, tmp_path, skills_dir=tmp_path / "skills")
    sid = await engine.new_session(confirmation="never")
    await engine.scheduler.send_message(sid, "hi")
    assert await engine.scheduler.wait(sid) == "completed"
    (activated,) = engine.events(sid, "SkillActivated")
    assert isinstance(activated, S.SkillActivated)
    # Shown as written; found by either spelling; the seed's flat fields are its limits.
    assert (activated.name, activated.skill_version) == ("deep_research", "1.0.0")
    assert list(activated.allowed_tools or ()) == ["web_search", "read_url", "create_doc"]
    assert (activated.max_iterations, activated.timeout) == (20, 300)
    read = [e for e in engine.events(sid, "ToolResultRecorded")
            if isinstance(e, S.ToolResultRecorded) and e.tool_use_id == "f1"]  # fmt: skip
    assert read[0].status == "success" and "searching" in read[0].summary
