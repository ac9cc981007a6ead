"""What a new user tripped on in their first hour (issue 35 item 7), each trip kept
from coming back: how to get a model, the bundled model's citations, the demo's
report, `replay` and `usage` on a data directory that holds nothing, and the
answer of an approved call made by hand."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from uuid import uuid4

import pytest

from adapters.blobs.filesystem import FilesystemBlobStore
from adapters.bootstrap.parts import build_llm, model_notice
from adapters.cli import main
from adapters.commands import cli_commands
from adapters.commands.demo import print_artifact
from adapters.config.settings import Settings
from adapters.llm.router import ModelRouter
from adapters.llm.scripted import load_llm_spec
from application.ports import LLM, LLMNotConfigured
from application.tool_calls import action_id_for
from domain.conversation import Message, ModelRequest, TextBlock
from domain.session import AgentSession as S
from tests.fakes.engine import make_engine

KEYS = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "GEMINI_API_KEY",
        "GOOGLE_API_KEY")  # fmt: skip


@pytest.fixture
def no_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # no credentials file of the machine's
    for name in KEYS:
        monkeypatch.delenv(name, raising=False)


# -- a model -------------------------------------------------------------------------


def test_without_a_key_the_start_notice_says_chats_fail_and_every_way_to_get_a_model(
    no_keys: None, tmp_path: Path
) -> None:
    level, text = model_notice(Settings(data_dir=tmp_path))
    assert level == logging.WARNING and "\n" not in text
    assert text.startswith("model: none")
    assert "claude-sonnet-5-5" in text and "LLM_NOT_CONFIGURED" in text
    for way in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "TOKENDANCE_MODEL",
                "TOKENDANCE_LLM=scripted:demo"):  # fmt: skip
        assert way in text, way


def test_with_the_scripted_model_the_start_notice_names_it_and_how_to_set_a_real_one(
    no_keys: None, tmp_path: Path
) -> None:
    level, text = model_notice(Settings(data_dir=tmp_path, llm="scripted:demo"))
    assert level == logging.WARNING
    assert text.startswith("model: the scripted model scripted:demo")
    assert "demo.yaml" in text and "unset TOKENDANCE_LLM" in text
    assert "ANTHROPIC_API_KEY" in text


def test_with_a_key_the_start_notice_names_the_model(
    monkeypatch: pytest.MonkeyPatch, no_keys: None, tmp_path: Path
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-a-real-key")
    level, text = model_notice(Settings(data_dir=tmp_path, model="openai:gpt-4.1"))
    assert level == logging.INFO
    assert text.startswith("model: openai:gpt-4.1")


def test_building_the_model_says_nothing_so_commands_that_call_none_do_not_warn(
    no_keys: None, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.DEBUG):
        llm = build_llm(Settings(data_dir=tmp_path))
    assert isinstance(llm, ModelRouter)
    assert [r.getMessage() for r in caplog.records if "model" in r.getMessage()] == []


async def test_a_chat_without_a_model_fails_saying_how_to_get_one(
    no_keys: None, tmp_path: Path
) -> None:
    llm: LLM = build_llm(Settings(data_dir=tmp_path))
    ask = ModelRequest(system="s", tools=(), messages=(Message("user", (TextBlock("hi"),)),))
    with pytest.raises(LLMNotConfigured) as failed:
        async for _ in llm.stream(ask):
            pass
    assert "ANTHROPIC_API_KEY" in str(failed.value)
    assert "TOKENDANCE_LLM=scripted:demo" in str(failed.value)


# -- the bundled scripted model ------------------------------------------------------


async def test_the_bundled_models_answer_cites_nothing_it_has_no_source_for(
    tmp_path: Path,
) -> None:
    engine = make_engine(load_llm_spec("scripted:demo"), tmp_path)
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "Do heat pumps work in cold climates?")
    assert await engine.scheduler.wait(sid) == "completed"
    turns = engine.events(sid, "AssistantTurnRecorded")
    assert turns and all(isinstance(t, S.AssistantTurnRecorded) for t in turns)
    assert [t.unknown_markers for t in turns] == [[] for _ in turns]  # type: ignore[attr-defined]
    answer = turns[-1].content[0]  # type: ignore[attr-defined]
    assert "https://www.energy.gov/" in str(answer.get("text"))  # its links are still there


# -- the demo's report ---------------------------------------------------------------


async def test_the_demo_shows_its_report_on_disk_not_a_download_no_user_can_make(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blobs = FilesystemBlobStore(tmp_path / "blobs")
    ref = await blobs.put(b"# Report\n\nHeat pumps work.\n")
    made = S.ArtifactCreated(
        originator_id=uuid4(), originator_version=7, timestamp=S.ArtifactCreated.create_timestamp(),
        kind="report", name="../report.md", blob_ref=ref, size=26, media_type="text/markdown",
        sha256="0" * 64, tool_use_id=None,
    )  # fmt: skip
    await print_artifact(blobs, made, tmp_path / "out")
    out = capsys.readouterr().out
    written = tmp_path / "out" / "report.md"
    assert written.read_bytes() == b"# Report\n\nHeat pumps work.\n"
    assert f"written: {written}" in out
    assert "/api/v1/" not in out


# -- replay and usage on a data directory that holds nothing -------------------------


@pytest.mark.parametrize("command", [["usage"], ["replay", str(uuid4())]])
def test_replay_and_usage_on_a_data_directory_with_nothing_say_so_and_start_nothing(
    tmp_path: Path,
    command: list[str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    no_keys: None,
) -> None:
    for name in [n for n in os.environ if n.startswith("TOKENDANCE_")]:
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    # The process's logging stays pytest's (the command would configure its own).
    monkeypatch.setattr(cli_commands, "configure_logging", lambda *_: None)
    with caplog.at_level(logging.INFO), pytest.raises(SystemExit) as stopped:
        main(command)
    said = str(stopped.value.code)
    assert f"data directory {tmp_path / '.tokendance'}" in said
    assert "--data-dir" in said and "nothing recorded" in said
    assert [r.getMessage() for r in caplog.records if "model" in r.getMessage()] == []
    assert not (tmp_path / ".tokendance").exists()  # no new empty servers


# -- a call made by hand, approved ---------------------------------------------------


async def test_an_approved_call_made_by_hand_answers_with_its_result(tmp_path: Path) -> None:
    engine = make_engine(load_llm_spec("scripted:demo"), tmp_path)
    sid = await engine.new_session(confirmation="always")
    manual = engine.scheduler.manual
    assert manual is not None
    asked = await manual.execute(sid, "note_progress", {"text": "checked by hand"})
    assert asked.status == "confirm_required" and asked.action_id is not None
    answer = await engine.scheduler.answer(sid, asked.action_id, True, None, "alice")
    assert answer.by_hand is not None
    assert (answer.by_hand.tool_use_id, answer.by_hand.status) == (asked.tool_use_id, "success")
    assert answer.by_hand.result == "progress noted"
    assert "runs now" not in answer.next_action and "note_progress ran" in answer.next_action
    assert action_id_for(sid, asked.tool_use_id) == asked.action_id
