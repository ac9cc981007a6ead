"""Checks on SSE payloads shared by the contract tests: the exported schema, and samples."""

from __future__ import annotations

import json
from decimal import Decimal
from functools import cache
from uuid import UUID, uuid4

import jsonschema_rs

from adapters.bootstrap.in_memory import in_memory_sessions
from application.sessions import SessionService
from domain.budgets import ThresholdCrossing
from domain.conversation import (
    ModelCitation,
    ModelTurn,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
    Usage,
)
from domain.deck_fold import DeckHistory
from domain.decks import Deck, Slide
from domain.events import SessionEvent
from domain.session_decks import File
from domain.values import (
    AttachedFile,
    Citation,
    CitedSource,
    PlanItem,
    RecalledMemory,
    SkillSpec,
    SourceSeen,
)
from schemas import sse
from schemas.export import SSE_SCHEMA


@cache
def _validator() -> jsonschema_rs.Validator:
    return jsonschema_rs.validator_for(json.loads(SSE_SCHEMA.read_text()))


def checked(payload: sse.SsePayload) -> object:
    """The payload as JSON, after checking it decodes to itself and fits the schema file."""
    data = sse.encode(payload)
    assert sse.decode(data) == payload, payload
    document = json.loads(data)
    _validator().validate(document)
    assert document["type"] == sse.event_type(payload)
    return document


def without_timestamps(document: object) -> object:
    if isinstance(document, dict):
        return {k: without_timestamps(v) for k, v in document.items() if k != "timestamp"}
    return document


def one_of_each() -> list[SessionEvent]:
    """A session whose log holds at least one event of every class (in-memory store)."""
    app = in_memory_sessions()
    sid = app.start_session(workspace_id=uuid4(), owner_id=uuid4(), title="Every event").session_id
    sheet = AttachedFile(uuid4(), "data/sales.csv", "text/csv", 23, "month,amount\n1,10\n")
    app.append_user_message(sid, "hello", attachments=["sha256:abc"], files=[sheet])
    run = uuid4()
    app.request_run(sid, run)
    app.start_run(sid, run, "worker-1")
    app.use_fallback_model(
        sid, run, "claude-sonnet-4-5", "openai:gpt-4.1", "529 overloaded", "LLM_OVERLOADED"
    )
    calc = {"server": "calc", "tool": "add", "description": "Add.", "risky": False,
            "input_schema": {"type": "object"}}  # fmt: skip
    app.change_mcp_toolset(sid, run, [calc], [{"server": "down", "reason": "not found"}])
    recalled = RecalledMemory(uuid4(), f"user:{uuid4()}", "preference", "Likes tables", 0.03)
    app.recall_memories(sid, run, "hello", [recalled])
    app.record_assistant_turn(sid, run, _turn(), latency_ms=12)
    _tools_and_memory(app, sid)
    deck_changes(app, sid)
    _cited_answer(app, sid, run)
    app.complete_run(sid, run)
    for end in ("fail", "stop"):
        run = uuid4()
        app.request_run(sid, run)
        app.start_run(sid, run, "worker-2")
        if end == "fail":
            app.fail_run(sid, run, "the model is unreachable", "LLM_ERROR")
        else:
            app.stop_run(sid, run)
    app.rename_session(sid, "Renamed")
    app.complete_session(sid)
    app.archive_session(sid)
    return list(app.session_events(sid))


def _turn() -> ModelTurn:
    blocks = (
        ThinkingBlock("Think first.", "sig"),
        TextBlock("Let me look."),
        ToolUseBlock("toolu_1", "search", {"query": "heat pumps", "nested": {"n": [1, None]}}),
    )
    return ModelTurn(blocks, "tool_use", Usage(10, 5, 3, 2), "claude-test")


def _cited_answer(app: SessionService, sid: UUID, run: UUID) -> None:
    """A result showing a source, and a turn citing it (and a marker naming none)."""
    app.request_tool_call(sid, "toolu_3", "web_search", {"query": "a"})
    app.record_tool_result(sid, "toolu_3", "success", "[1] A", sources=[1])
    quoted = ModelCitation("https://example.org/a", "[1] A", "about a")
    turn = ModelTurn(
        (TextBlock("A works", (quoted,)), TextBlock(", and [9] too.")),
        "end_turn", Usage(10, 5, 3, 2), "claude-test",
    )  # fmt: skip
    cited = [CitedSource(1, "https://example.org/a", "A", "about a")]
    app.record_assistant_turn(sid, run, turn, 7, None, cited, [9])


def _tools_and_memory(app: SessionService, sid: UUID) -> None:
    app.request_tool_call(sid, "toolu_1", "search", {"query": "heat pumps"}, "risky")
    app.request_confirmation(sid, "act-1", "toolu_1", "search", {"query": "x"}, "Search the web")
    app.give_confirmation(sid, "act-1", True, "fine", by="user-1")
    app.record_tool_result(sid, "toolu_1", "success", "3 results", blob_ref="sha256:r")
    app.request_tool_call(sid, "toolu_2", "search", {"query": "more"})
    app.record_tool_result(sid, "toolu_2", "interrupted", "stopped", error="stopped")
    app.update_plan(sid, [PlanItem("Find facts", "in_progress"), PlanItem("Answer")])
    app.record_finding(sid, "Heat pumps work", [Citation("https://example.org/a", "A", "sha:1")])
    app.note_progress(sid, "searched")
    app.record_strike(sid, "search", "timeout", 1)
    app.request_reboot(sid, ["Where am I?"], 3)
    app.record_compaction(sid, "summary so far", 2, 1000, 100)
    app.activate_skill(sid, SkillSpec("deep-research", "1.0", "Search, then read."), 2.0, "keyword")
    app.record_sources(
        sid, "toolu_2", [SourceSeen("https://example.org/a", "A", "about a", "read", "sha256:a")]
    )
    app.note_budget_threshold(
        sid,
        ThresholdCrossing(
            "org", uuid4(), "2026-11", 80, Decimal("8.5"), Decimal(10), 85_000, 100_000
        ),
    )
    app.record_artifact(
        sid, "report", "report.md", "sha256:rep", size=10, sha256="abc", media_type="text/markdown"
    )


def deck_changes(app: SessionService, sid: UUID) -> None:
    """One event of each deck change (files made up: nothing renders here)."""

    def deck() -> Deck:
        return DeckHistory.of(app.session_events(sid)).current(1)

    def file(n: int) -> File:
        return File(f"sha256:deck{n}", 1000 + n, f"deck{n}", "toolu_deck")

    one, two = Slide("Intro", ("a", "b"), notes="say hi"), Slide("Two", layout="closing")
    app.change_deck(
        sid, lambda s: s.create_deck(1, "Deck", "deck.pptx", "business", [one], file(1))
    )
    app.change_deck(sid, lambda s: s.add_slide(deck(), 2, two, file(2)))
    app.change_deck(sid, lambda s: s.rewrite_slide(deck(), 1, Slide("Intro!"), file(3)))
    app.change_deck(sid, lambda s: s.reorder_slides(deck(), [2, 1], file(4)))
    app.change_deck(sid, lambda s: s.change_template(deck(), "minimal", file(5)))
    app.change_deck(sid, lambda s: s.remove_slide(deck(), 2, file(6)))
