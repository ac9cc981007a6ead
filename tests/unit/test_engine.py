"""The agent loop on the in-memory store: every branch of a run, scripted."""

from __future__ import annotations

from pathlib import Path

import pytest

from application.engine_settings import EngineSettings
from application.ports import LLMError, LLMOverloaded
from application.tool_calls import action_id_for
from domain.conversation import ModelRequest, ToolResultBlock
from domain.errors import ConfirmationAnswered, ConfirmationNotFound
from tests.fakes.engine import make_engine, scripted


def call(name: str, tool_id: str, **args: object) -> dict[str, object]:
    return {"name": name, "input": args, "id": tool_id}


def results_in(request: ModelRequest) -> list[ToolResultBlock]:
    return [b for m in request.messages for b in m.content if isinstance(b, ToolResultBlock)]


async def test_a_multi_step_run_records_every_step_and_streams_deltas(tmp_path: Path) -> None:
    plan = [{"title": "Search", "status": "in_progress"}]
    source = [{"url": "https://example.org/a", "title": "A"}]
    llm = scripted(
        {"thinking": "I should plan.", "tool_calls": [call("update_plan", "t1", items=plan)]},
        {"text": "Searching now.", "tool_calls": [call("search", "t2", query="heat pumps")]},
        {
            "tool_calls": [
                call("record_finding", "t3", text="They work at -20C", citations=source),
                call("note_progress", "t4", text="searched once"),
            ]
        },
        {
            "text": "Heat pumps work in the cold [A].",
            "usage": {"input": 50, "output": 9, "cache_read": 40, "cache_write": 3},
        },
    )
    engine = make_engine(llm, tmp_path)
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "Do heat pumps work in cold climates?")
    assert await engine.scheduler.wait(sid) == "completed"

    assert engine.kinds(sid) == [
        "SessionStarted", "UserMessageAppended", "RunRequested", "RunStarted",
        "AssistantTurnRecorded", "ToolCallRequested", "PlanUpdated", "ToolResultRecorded",
        "AssistantTurnRecorded", "ToolCallRequested", "ToolResultRecorded",
        "AssistantTurnRecorded", "ToolCallRequested", "FindingRecorded", "ToolResultRecorded",
        "ToolCallRequested", "ProgressNoted", "ToolResultRecorded",
        "AssistantTurnRecorded", "RunCompleted",
    ]  # fmt: skip
    assert engine.search.calls == ["heat pumps"]
    last_turn = engine.events(sid, "AssistantTurnRecorded")[-1]
    assert (last_turn.cache_read_tokens, last_turn.cache_write_tokens) == (40, 3)  # type: ignore[attr-defined]
    streamed = "".join(d.text for d in engine.deltas.deltas[sid] if d.type == "text_delta")
    assert streamed == "Searching now.Heat pumps work in the cold [A]."
    # The model saw the tool result and the plan recited at the very end.
    last_request = llm.requests[-1]
    assert results_in(last_request)[-1].content == "progress noted"
    assert "[~] 1. Search" in last_request.messages[-1].content[-1].text  # type: ignore[union-attr]


async def test_unknown_tools_and_bad_arguments_are_kept_failures(tmp_path: Path) -> None:
    llm = scripted(
        {"tool_calls": [call("teleport", "t1", to="mars"), call("search", "t2", q="wrong field")]},
        {"text": "I will stop guessing."},
    )
    engine = make_engine(llm, tmp_path)
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "go")
    assert await engine.scheduler.wait(sid) == "completed"
    results = engine.events(sid, "ToolResultRecorded")
    assert [r.status for r in results] == ["error", "error"]  # type: ignore[attr-defined]
    assert "unknown tool 'teleport'" in results[0].error  # type: ignore[attr-defined]
    assert "invalid arguments for search" in results[1].error  # type: ignore[attr-defined]
    seen = results_in(llm.requests[-1])
    assert all(r.is_error for r in seen) and "teleport" in seen[0].content
    assert engine.search.calls == []


async def test_three_identical_failures_record_a_strike_the_model_sees(tmp_path: Path) -> None:
    llm = scripted(
        *[{"tool_calls": [call("search", f"t{i}", query=f"try {i}")]} for i in range(3)],
        {"text": "Changing approach."},
    )
    engine = make_engine(llm, tmp_path)
    engine.search.fail_with = "HTTP 503 from upstream after 1234 ms"
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "search")
    assert await engine.scheduler.wait(sid) == "completed"
    strikes = engine.events(sid, "StrikeRecorded")
    assert len(strikes) == 1 and strikes[0].count == 3 and strikes[0].tool == "search"  # type: ignore[attr-defined]
    last = llm.requests[-1].messages[-1]
    assert any("failed 3 times" in getattr(b, "text", "") for b in last.content)


async def test_a_reboot_is_requested_after_iterations_without_progress(tmp_path: Path) -> None:
    llm = scripted(
        *[{"tool_calls": [call("search", f"t{i}", query="x")]} for i in range(3)], {"text": "ok"}
    )
    engine = make_engine(llm, tmp_path, settings=EngineSettings(reboot_after=2))
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "loop")
    await engine.scheduler.wait(sid)
    reboots = engine.events(sid, "RebootRequested")
    assert len(reboots) == 1 and len(reboots[0].questions) == 5  # type: ignore[attr-defined]
    assert any(
        "Where am I?" in getattr(b, "text", "") for m in llm.requests[2].messages for b in m.content
    )


async def test_a_chat_of_many_short_answers_is_no_stall(tmp_path: Path) -> None:
    """Each message of the user is news: turns are counted as stalled from the newest
    one, so a plain chat never asks the model the reboot questions."""
    llm = scripted(*[{"text": f"answer {i}"} for i in range(5)])
    engine = make_engine(llm, tmp_path, settings=EngineSettings(reboot_after=2))
    sid = await engine.new_session()
    for i in range(5):
        await engine.scheduler.send_message(sid, f"question {i}")
        await engine.scheduler.wait(sid)
    assert engine.events(sid, "RebootRequested") == []
    assert len(engine.events(sid, "RunCompleted")) == 5


async def test_a_risky_call_waits_for_approval_then_runs(tmp_path: Path) -> None:
    llm = scripted({"tool_calls": [call("delete_file", "t1", path="/tmp/x")]}, {"text": "Deleted."})
    engine = make_engine(llm, tmp_path)
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "delete /tmp/x")
    assert await engine.scheduler.wait(sid) == "suspended"
    assert engine.delete_file.deleted == []
    assert engine.sessions.get_session(sid).status == "waiting"
    asked = engine.events(sid, "ConfirmationRequested")[0]
    assert asked.action_id == action_id_for(sid, "t1")  # type: ignore[attr-defined]

    await engine.scheduler.confirm(sid, asked.action_id, True, None, "alice")  # type: ignore[attr-defined]
    assert await engine.scheduler.wait(sid) == "completed"
    assert engine.delete_file.deleted == ["/tmp/x"]
    with pytest.raises(ConfirmationAnswered):
        await engine.scheduler.confirm(sid, asked.action_id, True, None, "alice")  # type: ignore[attr-defined]


async def test_a_rejected_call_is_kept_as_cancelled_and_the_agent_goes_on(tmp_path: Path) -> None:
    llm = scripted(
        {"tool_calls": [call("delete_file", "t1", path="/etc")]},
        {"text": "Understood, I will not."},
    )
    engine = make_engine(llm, tmp_path)
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "clean up")
    await engine.scheduler.wait(sid)
    action = engine.events(sid, "ConfirmationRequested")[0].action_id  # type: ignore[attr-defined]
    await engine.scheduler.confirm(sid, action, False, "too dangerous", "bob")
    assert await engine.scheduler.wait(sid) == "completed"
    result = engine.events(sid, "ToolResultRecorded")[0]
    assert result.status == "cancelled" and "too dangerous" in result.summary  # type: ignore[attr-defined]
    assert engine.delete_file.deleted == []
    assert "Cancelled" in results_in(llm.requests[-1])[0].content


async def test_confirming_an_unknown_action_records_nothing(tmp_path: Path) -> None:
    engine = make_engine(scripted(), tmp_path)
    sid = await engine.new_session()
    with pytest.raises(ConfirmationNotFound):
        await engine.scheduler.confirm(sid, "no-such-action", True, None, "x")
    assert engine.kinds(sid) == ["SessionStarted"]


@pytest.mark.parametrize(
    ("policy", "tool", "asks"),
    [("never", "delete_file", False), ("always", "search", True), ("risky", "search", False)],
)
async def test_the_confirmation_policy_is_per_session(
    tmp_path: Path, policy: str, tool: str, asks: bool
) -> None:
    args = {"path": "/x"} if tool == "delete_file" else {"query": "q"}
    llm = scripted({"tool_calls": [{"name": tool, "input": args, "id": "t1"}]}, {"text": "done"})
    engine = make_engine(llm, tmp_path)
    sid = await engine.new_session(confirmation=policy)
    await engine.scheduler.send_message(sid, "go")
    end = await engine.scheduler.wait(sid)
    assert (end == "suspended") is asks
    assert bool(engine.events(sid, "ConfirmationRequested")) is asks


async def test_tools_outside_the_allowed_list_are_refused(tmp_path: Path) -> None:
    llm = scripted({"tool_calls": [call("search", "t1", query="x")]}, {"text": "ok"})
    engine = make_engine(llm, tmp_path)
    sid = await engine.new_session(allowed_tools=["update_plan"])
    await engine.scheduler.send_message(sid, "go")
    await engine.scheduler.wait(sid)
    assert "not allowed" in engine.events(sid, "ToolResultRecorded")[0].error  # type: ignore[attr-defined]
    assert engine.search.calls == []
    assert "may only use these tools: update_plan" in llm.requests[0].system
    assert [t.name for t in llm.requests[0].tools] == ["update_plan"], "only what it may use"


async def test_the_iteration_limit_and_token_budget_end_a_run(tmp_path: Path) -> None:
    llm = scripted(
        *[
            {
                "tool_calls": [call("search", f"t{i}", query="x")],
                "usage": {"input": 100, "output": 100},
            }
            for i in range(10)
        ]
    )
    engine = make_engine(llm, tmp_path)
    capped = await engine.new_session(max_iterations=2)
    await engine.scheduler.send_message(capped, "go")
    await engine.scheduler.wait(capped)
    assert engine.events(capped, "RunCompleted")[0].reason == "max_iterations"  # type: ignore[attr-defined]
    budgeted = await engine.new_session(token_budget=500)
    await engine.scheduler.send_message(budgeted, "go")
    await engine.scheduler.wait(budgeted)
    assert engine.events(budgeted, "RunCompleted")[0].reason == "token_budget"  # type: ignore[attr-defined]
    assert len(engine.events(budgeted, "AssistantTurnRecorded")) == 3


async def test_a_model_error_fails_the_run_and_the_session_stays_usable(tmp_path: Path) -> None:
    failures = iter([LLMOverloaded("overloaded after 4 attempts")])

    def model(request: ModelRequest) -> dict[str, object]:
        for error in failures:
            raise error
        return {"text": "back again"}

    from adapters.llm.scripted import ScriptedLLM

    engine = make_engine(ScriptedLLM(model), tmp_path)
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "hello")
    assert await engine.scheduler.wait(sid) == "failed"
    failed = engine.events(sid, "RunFailed")[0]
    assert failed.error_code == "LLM_OVERLOADED" and "overloaded" in failed.reason  # type: ignore[attr-defined]
    await engine.scheduler.send_message(sid, "try again")
    assert await engine.scheduler.wait(sid) == "completed"


async def test_large_tool_output_goes_to_the_blob_store_with_a_summary_in_context(
    tmp_path: Path,
) -> None:
    llm = scripted({"tool_calls": [call("search", "t1", query="big")]}, {"text": "read it"})
    engine = make_engine(llm, tmp_path)
    engine.search.answer = lambda q: "line of text\n" * 2000
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "go")
    await engine.scheduler.wait(sid)
    result = engine.events(sid, "ToolResultRecorded")[0]
    blob = result.blob_ref  # type: ignore[attr-defined]
    assert blob is not None and (tmp_path / "blobs" / blob[:2] / blob[2:4] / blob).exists()
    assert len(result.summary) < 5000 and "characters omitted" in result.summary  # type: ignore[attr-defined]


async def test_compaction_is_recorded_and_the_log_stays_whole(tmp_path: Path) -> None:
    searches = iter(range(8))

    def model(request: ModelRequest) -> dict[str, object]:
        if request.tools == ():
            return {"text": "SUMMARY: searched a lot"}
        for n in searches:
            return {"tool_calls": [{"name": "search", "input": {"query": f"q{n}"}, "id": f"t{n}"}]}
        return {"text": "done"}

    from adapters.llm.scripted import ScriptedLLM

    llm = ScriptedLLM(model)
    engine = make_engine(
        llm, tmp_path, settings=EngineSettings(context_window=9000)
    )  # the tools' schemas are ~3.5K
    engine.search.answer = lambda q: "x" * 3000
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "search many times")
    assert await engine.scheduler.wait(sid) == "completed"
    compactions = engine.events(sid, "ContextCompacted")
    assert compactions, "the context never reached 70% of the window"
    first = compactions[0]
    assert first.summary == "SUMMARY: searched a lot" and first.tokens_after < first.tokens_before  # type: ignore[attr-defined]
    after = [r for r in llm.requests if r.tools and "SUMMARY" in str(r.messages[0].content[0])]
    assert after, "requests after compaction start from the summary"
    assert engine.kinds(sid).count("ToolResultRecorded") == 8  # nothing was removed


async def test_a_model_stream_without_a_turn_fails_cleanly(tmp_path: Path) -> None:
    class Silent:
        async def stream(self, request: ModelRequest):  # type: ignore[no-untyped-def]
            raise LLMError("no model is configured")
            yield  # pragma: no cover

    engine = make_engine(Silent(), tmp_path)
    sid = await engine.new_session()
    await engine.scheduler.send_message(sid, "hi")
    assert await engine.scheduler.wait(sid) == "failed"
