"""The SSE contract: every event class maps to payloads the exported schema accepts."""

from __future__ import annotations

from adapters.http.streams.sse import live_payload, payloads
from domain.conversation import TextDelta, ThinkingDelta
from domain.events import SESSION_EVENT_CLASSES
from domain.session import AgentSession as S
from schemas import sse
from schemas.export import SSE_SCHEMA, sse_schema_text
from tests.unit.sse_check import checked, one_of_each

FRONTEND = {
    "thinking": {"content"},
    "tool_call": {"id", "name", "status"},
    "tool_result": {"id", "status"},
    "content": {"content"},
    "confirm_required": {"action_id", "tool", "args", "description"},
    "done": {"status", "message_id", "tokens_used"},
    "error": {"message", "error_code"},
}


def test_the_exported_schema_file_is_current() -> None:
    assert SSE_SCHEMA.read_text() == sse_schema_text(), "run `python -m schemas.export`"


def test_every_event_class_maps_to_payloads_that_fit_the_schema() -> None:
    events = one_of_each()
    assert {type(e) for e in events} == set(SESSION_EVENT_CLASSES), (
        "add the new event class to tests/unit/sse_check.py:one_of_each"
    )
    for e in events:
        mapped = payloads(e)
        assert mapped, e
        stored = [p for p in mapped if sse.sse_id(p) is not None]
        assert [sse.sse_id(p) for p in stored] == [e.originator_version], mapped
        for payload in mapped:
            checked(payload)


def test_live_deltas_are_payloads_without_an_id() -> None:
    for delta in (TextDelta("Hel"), ThinkingDelta("hmm")):
        payload = live_payload(delta)
        assert sse.sse_id(payload) is None
        checked(payload)
    assert checked(live_payload(TextDelta("Hel"))) == {"type": "content", "content": "Hel"}


def test_the_frontend_events_carry_the_frontend_fields() -> None:
    seen: set[str] = set()
    for e in one_of_each():
        for payload in [*payloads(e), live_payload(TextDelta("x"))]:
            document = checked(payload)
            assert isinstance(document, dict)
            kind = sse.event_type(payload)
            if kind in FRONTEND:
                seen.add(kind)
                assert FRONTEND[kind] <= document.keys(), (kind, document)
    assert seen == FRONTEND.keys()


def test_a_stored_turn_is_a_message_and_never_content() -> None:
    turns = [e for e in one_of_each() if isinstance(e, S.AssistantTurnRecorded)]
    mapped = [sse.event_type(p) for p in payloads(turns[0])]
    assert mapped == ["thinking", "message"]
    thinking, message = payloads(turns[0])
    assert checked(thinking) == {"type": "thinking", "content": "", "status": "end"}
    assert isinstance(message, sse.Message)
    assert (message.role, message.content, message.id) == (
        "assistant",
        "Let me look.",
        str(turns[0].originator_version),
    )


def test_done_carries_the_runs_tokens_and_its_last_message() -> None:
    events = one_of_each()
    turn = [e for e in events if isinstance(e, S.AssistantTurnRecorded)][-1]
    done = next(p for e in events for p in payloads(e) if isinstance(p, sse.Done))
    assert done.status == "completed"
    assert done.message_id == str(turn.originator_version)
    assert done.tokens_used == 2 * (10 + 5 + 3 + 2)
    assert [(a.kind, a.name) for a in done.artifacts or []] == [
        ("report", "report.md"),
        ("ppt", "deck.pptx"),
    ]


def test_a_cited_turn_ends_with_its_citations_and_flags_what_names_no_source() -> None:
    turn = [e for e in one_of_each() if isinstance(e, S.AssistantTurnRecorded)][-1]
    content, message, notice = payloads(turn)
    assert isinstance(content, sse.Content) and isinstance(message, sse.Message)
    assert isinstance(notice, sse.Notice)
    cited = {"index": 1, "url": "https://example.org/a", "title": "A",
             "domain": "example.org", "snippet": "about a"}  # fmt: skip
    assert checked(content) == {"type": "content", "content": "", "citations": [cited]}
    # The model's own citation shows as its marker; the unknown [9] stays plain text.
    assert message.content == "A works[1], and [9] too."
    assert message.citations == content.citations
    assert message.unresolved_citations == [9] and notice.markers == [9]


def test_an_interrupted_call_is_cancelled_for_the_frontend() -> None:
    results = [p for e in one_of_each() for p in payloads(e) if isinstance(p, sse.ToolResult)]
    assert [(r.status, r.outcome) for r in results] == [
        ("success", "success"),
        ("cancelled", "interrupted"),
        ("success", "success"),
    ]
