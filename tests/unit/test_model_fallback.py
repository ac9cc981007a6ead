"""Fallback models take over a call the model could not serve, and the log says so."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from adapters.bootstrap import replay_engine
from adapters.llm.scripted import ScriptedLLM
from application.engine_settings import EngineSettings
from application.ports import LLMBadRequest, LLMError, LLMOverloaded, LLMRateLimited
from application.replay import replay
from domain.conversation import ModelRequest, ModelTurn, StreamItem, TextBlock, TextDelta, Usage
from tests.fakes.engine import DeleteFile, FlakySearch, make_engine, tools_with

PRIMARY, SECOND, THIRD = "claude-sonnet-4-5", "openai:gpt-4.1", "gemini:gemini-2.5-pro"


class Capacity:
    """A model function: the models in `down` answer with `error`; the others call
    `search` once, then answer. Every model asked is remembered, in order."""

    def __init__(self, *down: str, error: LLMError | None = None) -> None:
        self.down = set(down)
        self.error = error or LLMOverloaded("Anthropic answered 529 overloaded_error")
        self.asked: list[str | None] = []

    def __call__(self, request: ModelRequest) -> dict[str, object]:
        self.asked.append(request.model)
        if request.model in self.down:
            raise self.error
        if (
            not any(m.role == "assistant" for m in request.messages[-1:])
            and len(request.messages) < 2
        ):
            return {"tool_calls": [{"name": "search", "input": {"query": "q"}, "id": "t1"}]}
        return {"text": f"answered by {request.model}"}


def engine_with(model: Capacity, tmp_path: Path, fallback: tuple[str, ...]):  # type: ignore[no-untyped-def]
    settings = EngineSettings(model=PRIMARY, model_fallback=fallback)
    return make_engine(ScriptedLLM(model), tmp_path, settings=settings)


async def test_an_overloaded_model_hands_the_call_to_the_fallback_for_the_rest_of_the_run(
    tmp_path: Path,
) -> None:
    model = Capacity(PRIMARY)
    engine = engine_with(model, tmp_path, (SECOND,))
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "hello")

    assert await engine.scheduler.wait(sid) == "completed"
    (switch,) = engine.events(sid, "ModelFallbackUsed")
    assert (switch.from_model, switch.to_model, switch.error_code) == (  # type: ignore[attr-defined]
        PRIMARY, SECOND, "LLM_OVERLOADED",
    )  # fmt: skip
    assert "529" in switch.reason  # type: ignore[attr-defined]
    # The primary once; then the fallback answers the call and the run's next one.
    assert model.asked == [PRIMARY, SECOND, SECOND]
    turns = engine.events(sid, "AssistantTurnRecorded")
    assert [t.model for t in turns] == [SECOND, SECOND]  # type: ignore[attr-defined]
    kinds = engine.kinds(sid)
    assert kinds.index("ModelFallbackUsed") < kinds.index("AssistantTurnRecorded")

    # The next run starts on the session's own model again.
    model.down.clear()
    await engine.scheduler.send_message(sid, "again")
    assert await engine.scheduler.wait(sid) == "completed"
    assert model.asked[3] == PRIMARY and len(engine.events(sid, "ModelFallbackUsed")) == 1


async def test_a_run_with_a_fallback_replays_identically(tmp_path: Path) -> None:
    model = Capacity(PRIMARY, SECOND, error=LLMRateLimited("429 rate limited"))
    engine = engine_with(model, tmp_path, (SECOND, THIRD))
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "hello")
    assert await engine.scheduler.wait(sid) == "completed"
    switches = [(e.from_model, e.to_model) for e in engine.events(sid, "ModelFallbackUsed")]  # type: ignore[attr-defined]
    assert switches == [(PRIMARY, SECOND), (SECOND, THIRD)]

    stored = list(engine.sessions.session_events(sid))
    tools = tools_with(DeleteFile(), FlakySearch())
    report = await replay(stored, engine=replay_engine(engine.runner, tools=tools))
    assert report.identical, report.divergence


async def test_when_every_model_is_down_the_run_fails_with_the_last_error(tmp_path: Path) -> None:
    model = Capacity(PRIMARY, SECOND)
    engine = engine_with(model, tmp_path, (SECOND,))
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "hello")

    assert await engine.scheduler.wait(sid) == "failed"
    assert len(engine.events(sid, "ModelFallbackUsed")) == 1
    (failed,) = engine.events(sid, "RunFailed")
    assert failed.error_code == "LLM_OVERLOADED"  # type: ignore[attr-defined]
    assert model.asked == [PRIMARY, SECOND]


@pytest.mark.parametrize("error", [LLMBadRequest("400 invalid"), LLMError("client error")])
async def test_a_request_the_model_refuses_is_not_handed_on(
    tmp_path: Path, error: LLMError
) -> None:
    model = Capacity(PRIMARY, error=error)
    engine = engine_with(model, tmp_path, (SECOND,))
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "hello")

    assert await engine.scheduler.wait(sid) == "failed"
    assert engine.events(sid, "ModelFallbackUsed") == [] and model.asked == [PRIMARY]


class BreaksMidTurn:
    """Streams part of a turn, then fails as overloaded (retryable, after a delta)."""

    def __init__(self) -> None:
        self.asked: list[str | None] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        self.asked.append(request.model)
        if request.model == PRIMARY:
            yield TextDelta("Half an ans")
            raise LLMOverloaded("overloaded (after part of the turn was streamed)", retryable=True)
        yield ModelTurn((TextBlock("whole"),), "end_turn", Usage(1, 1), str(request.model))


async def test_a_turn_never_switches_model_once_part_of_it_was_streamed(tmp_path: Path) -> None:
    llm = BreaksMidTurn()
    engine = make_engine(
        llm, tmp_path, settings=EngineSettings(model=PRIMARY, model_fallback=(SECOND,))
    )
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "hello")

    assert await engine.scheduler.wait(sid) == "failed"
    assert llm.asked == [PRIMARY] and engine.events(sid, "ModelFallbackUsed") == []


async def test_a_skill_prefers_its_model_unless_the_session_names_one(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    (skills / "haiku-writer").mkdir(parents=True)
    (skills / "haiku-writer" / "SKILL.md").write_text(
        "---\nname: haiku-writer\ndescription: Writes haiku.\nmodel: gemini:gemini-2.5-flash\n"
        "metadata:\n  keywords: haiku\n---\nWrite a haiku.\n"
    )
    model = Capacity()
    settings = EngineSettings(model=PRIMARY)
    engine = make_engine(ScriptedLLM(model), tmp_path, settings=settings, skills_dir=skills)

    plain = await engine.new_session()
    await engine.scheduler.send_message(plain, "a haiku please")
    assert await engine.scheduler.wait(plain) == "completed"
    assert engine.events(plain, "SkillActivated")[0].model == "gemini:gemini-2.5-flash"  # type: ignore[attr-defined]
    assert set(model.asked) == {"gemini:gemini-2.5-flash"}

    model.asked.clear()
    pinned = await engine.new_session(model="openai:gpt-4.1")
    await engine.scheduler.send_message(pinned, "a haiku please")
    assert await engine.scheduler.wait(pinned) == "completed"
    assert set(model.asked) == {"openai:gpt-4.1"}
