"""Context assembly: `build_request` on logs written by the real aggregate (in-memory store)."""

from __future__ import annotations

import itertools
import json
from uuid import UUID, uuid4

import pytest

from adapters.bootstrap.in_memory import in_memory_sessions
from adapters.llm.anthropic_wire import to_wire
from domain.context import ContextFrame, build_request
from domain.conversation import (
    ContentBlock,
    Message,
    ModelRequest,
    ModelTurn,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolSpec,
    ToolUseBlock,
    Usage,
)
from domain.values import PlanItem, ToolResultStatus

QUERY_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {"query": {"type": "string"}},
    "required": ["query"],
}
FRAME = ContextFrame(
    system="You are a careful research agent.",
    tools=(
        ToolSpec("search", "Search the web.", QUERY_SCHEMA),
        ToolSpec("update_plan", "Replace the plan.", {"type": "object"}),
    ),
)
RECITATION = "[Current plan"


class Session:
    """One session's log, written through the application's commands."""

    def __init__(self) -> None:
        self.app = in_memory_sessions()
        receipt = self.app.start_session(workspace_id=uuid4(), owner_id=uuid4(), title="test")
        self.id = receipt.session_id
        self.run_id: UUID | None = None

    @property
    def version(self) -> int:
        return self.app.get_session(self.id).version

    def request(self) -> ModelRequest:
        return build_request(list(self.app.session_events(self.id)), FRAME)  # type: ignore[arg-type]

    def user(self, text: str, attachments: list[str] | None = None) -> None:
        self.app.append_user_message(self.id, text, attachments=attachments)

    def start_run(self) -> None:
        self.run_id = uuid4()
        self.app.request_run(self.id, self.run_id)
        self.app.start_run(self.id, self.run_id, "test-worker")

    def turn(self, *blocks: TextBlock | ThinkingBlock | ToolUseBlock) -> None:
        assert self.run_id is not None
        uses = any(isinstance(b, ToolUseBlock) for b in blocks)
        turn = ModelTurn(blocks, "tool_use" if uses else "end_turn", Usage(10, 5), "model")
        self.app.record_assistant_turn(self.id, self.run_id, turn, 120)

    def call(self, tool_use_id: str, query: str, result: str) -> None:
        """An assistant turn calling search, and its successful result."""
        self.turn(ToolUseBlock(tool_use_id, "search", {"query": query}))
        self.app.request_tool_call(self.id, tool_use_id, "search", {"query": query})
        self.app.record_tool_result(self.id, tool_use_id, "success", result)

    def plan(self, *items: tuple[str, str]) -> None:
        self.app.update_plan(self.id, [PlanItem(t, s) for t, s in items])


def blocks_of(request: ModelRequest) -> list[ContentBlock]:
    return [b for m in request.messages for b in m.content]


def texts_of(request: ModelRequest) -> str:
    return "\n".join(json.dumps(b.__dict__, default=str) for b in blocks_of(request))


def without_recitation(request: ModelRequest) -> tuple[Message, ...]:
    """The messages with the plan recitation and the cache breakpoint taken out."""
    messages = []
    for m in request.messages:
        content = tuple(
            b for b in m.content if not (isinstance(b, TextBlock) and b.text.startswith(RECITATION))
        )
        if content:
            messages.append(Message(m.role, content))
    return tuple(messages)


def wire_text(request: ModelRequest) -> str:
    wire = to_wire(request, model="m", max_tokens=1000)
    body = {"tools": wire.tools, "system": wire.system, "messages": wire.messages}
    return json.dumps(body, ensure_ascii=False)


@pytest.fixture
def session() -> Session:
    return Session()


def test_roles_alternate_and_consecutive_turns_of_one_role_merge(session: Session) -> None:
    session.user("First question.")
    session.user("And a second one.", attachments=["abc123"])
    session.start_run()
    session.turn(TextBlock("Part one."))
    session.turn(TextBlock("Part two."))
    session.user("Thanks.")
    messages = session.request().messages
    assert [m.role for m in messages] == ["user", "assistant", "user"]
    assert messages[0].content == (
        TextBlock("First question."),
        TextBlock("And a second one.\n[attachments: abc123]"),
    )
    assert messages[1].content == (TextBlock("Part one."), TextBlock("Part two."))
    assert messages[2].content == (TextBlock("Thanks."),)


def test_tool_results_come_first_in_a_user_message_even_after_a_user_text(
    session: Session,
) -> None:
    session.user("Find heat pump data.")
    session.start_run()
    session.turn(ToolUseBlock("t1", "search", {"query": "heat pumps"}))
    session.app.request_tool_call(session.id, "t1", "search", {"query": "heat pumps"})
    session.user("Also look at costs.")  # arrives while the tool runs
    session.app.record_tool_result(session.id, "t1", "success", "COP 3.1 at -15C")
    last = session.request().messages[-1]
    assert last.role == "user"
    assert last.content == (
        ToolResultBlock("t1", "COP 3.1 at -15C"),
        TextBlock("Also look at costs."),
    )


def test_thinking_blocks_keep_their_signature_and_their_place(session: Session) -> None:
    session.user("Think first.")
    session.start_run()
    thinking = ThinkingBlock("Let me reason about it.", "EqQBCkgIARAB-signature==")
    session.turn(thinking, TextBlock("Searching."), ToolUseBlock("t1", "search", {"query": "q"}))
    assistant = session.request().messages[1]
    assert assistant.content == (
        thinking,
        TextBlock("Searching."),
        ToolUseBlock("t1", "search", {"query": "q"}),
    )
    wire = to_wire(session.request(), model="m", max_tokens=1000)
    assert wire.messages[1]["content"][0] == {  # type: ignore[index]
        "type": "thinking",
        "thinking": "Let me reason about it.",
        "signature": "EqQBCkgIARAB-signature==",
    }


@pytest.mark.parametrize(
    ("status", "error", "expected"),
    [
        ("error", "HTTP 503", "Error: HTTP 503\nupstream unavailable"),
        (
            "cancelled",
            "rejected by the user",
            "Cancelled: rejected by the user\nupstream unavailable",
        ),
        ("interrupted", None, "Interrupted: upstream unavailable"),
    ],
)
def test_failed_results_are_errors_with_a_prefix(
    session: Session, status: ToolResultStatus, error: str | None, expected: str
) -> None:
    session.user("Search.")
    session.start_run()
    session.turn(ToolUseBlock("t1", "search", {"query": "q"}))
    session.app.request_tool_call(session.id, "t1", "search", {"query": "q"})
    session.app.record_tool_result(session.id, "t1", status, "upstream unavailable", error=error)
    result = session.request().messages[-1].content[0]
    assert result == ToolResultBlock("t1", expected, is_error=True)


def test_a_successful_result_is_its_summary_and_not_an_error(session: Session) -> None:
    session.user("Search.")
    session.start_run()
    session.call("t1", "q", "three results")
    assert session.request().messages[-1].content == (ToolResultBlock("t1", "three results"),)


def test_strikes_and_reboots_reach_the_model_after_the_results(session: Session) -> None:
    session.user("Search.")
    session.start_run()
    session.call("t1", "q", "nothing")
    session.app.record_strike(session.id, "search", "http #", 3)
    session.app.request_reboot(session.id, ["Where am I?", "What is the goal?"], 8)
    last = session.request().messages[-1]
    assert isinstance(last.content[0], ToolResultBlock)
    notice, reboot = last.content[1], last.content[2]
    assert isinstance(notice, TextBlock) and "`search` has now failed 3 times" in notice.text
    assert isinstance(reboot, TextBlock) and "1. Where am I?\n2. What is the goal?" in reboot.text


def test_the_newest_plan_is_recited_in_a_last_message_of_its_own(session: Session) -> None:
    session.user("Plan it.")
    session.start_run()
    session.plan(("Search", "in_progress"), ("Write", "pending"))
    session.call("t1", "q", "results")
    session.plan(("Search", "done"), ("Write", "in_progress"))
    request = session.request()
    conversation_end, last = request.messages[-2], request.messages[-1]
    assert conversation_end.role == "user"
    assert conversation_end.content[0] == ToolResultBlock("t1", "results")
    assert last.role == "user" and len(last.content) == 1
    recitation = last.content[0]
    assert isinstance(recitation, TextBlock)
    assert recitation.text.splitlines()[:3] == [
        "[Current plan: 1/2 done]",
        "[x] 1. Search",
        "[~] 2. Write",
    ]
    recited = [b for b in blocks_of(request) if isinstance(b, TextBlock) and RECITATION in b.text]
    assert recited == [recitation]  # once, and never the older plan


def test_after_an_assistant_turn_the_plan_comes_in_a_new_user_message(session: Session) -> None:
    session.user("Plan it.")
    session.plan(("Search", "pending"))
    session.start_run()
    session.turn(TextBlock("Done for now."))
    messages = session.request().messages
    assert [m.role for m in messages] == ["user", "assistant", "user"]
    assert len(messages[-1].content) == 1
    assert messages[-1].content[0].text.startswith("[Current plan: 0/1 done]")  # type: ignore[union-attr]


def test_without_a_plan_nothing_is_recited(session: Session) -> None:
    session.user("Hello.")
    assert RECITATION not in texts_of(session.request())


def test_exactly_one_breakpoint_sits_on_the_newest_message_of_the_conversation(
    session: Session,
) -> None:
    session.user("Go.")
    assert [m.cache_breakpoint for m in session.request().messages] == [True]
    session.start_run()
    session.plan(("Search", "in_progress"))
    for n in range(3):
        session.call(f"t{n}", f"q{n}", f"result {n}")
        messages = session.request().messages
        marked = [i for i, m in enumerate(messages) if m.cache_breakpoint]
        assert marked == [len(messages) - 2]  # the recitation after it is not cached
        wire = to_wire(session.request(), model="m", max_tokens=1000)
        on_wire = [
            (i, j)
            for i, m in enumerate(wire.messages)
            for j, b in enumerate(m["content"])  # type: ignore[arg-type]
            if "cache_control" in b  # type: ignore[operator]
        ]
        assert on_wire == [(len(messages) - 2, len(messages[-2].content) - 1)]


def test_after_a_compaction_the_summary_stands_for_everything_up_to_its_version(
    session: Session,
) -> None:
    session.user("OLD question about heat pumps.")
    session.start_run()
    session.call("old_t1", "OLD query", "OLD result")
    session.turn(TextBlock("OLD interim answer."))
    through = session.version
    session.call("t2", "new query", "new result")
    session.app.record_compaction(session.id, "They work in the cold.", through, 5000, 800)
    session.call("t3", "newer query", "newer result")
    request = session.request()
    first = request.messages[0]
    assert first.role == "user"
    assert first.content[0] == TextBlock(
        "[Summary of the conversation so far]\nThey work in the cold."
    )
    assert "OLD" not in texts_of(request)
    results = [b.tool_use_id for b in blocks_of(request) if isinstance(b, ToolResultBlock)]
    assert results == ["t2", "t3"]
    assert [m.role for m in request.messages] == ["user", "assistant", "user", "assistant", "user"]


def research_steps(session: Session) -> list[ModelRequest]:
    """The request before each step of a session that plans, searches and thinks."""
    session.user("Research heat pumps.")
    session.start_run()
    requests = [session.request()]
    for n in range(6):
        if n % 3 == 0:
            session.plan(*((f"Step {i}", "done" if i < n else "pending") for i in range(4)))
        session.turn(
            ThinkingBlock(f"Step {n}: what next?", f"sig-{n}"),
            ToolUseBlock(f"t{n}", "search", {"query": f"q{n}"}),
        )
        session.app.request_tool_call(session.id, f"t{n}", "search", {"query": f"q{n}"})
        session.app.record_tool_result(session.id, f"t{n}", "success", f"result {n} " * 50)
        requests.append(session.request())
    session.turn(TextBlock("The answer."))
    requests.append(session.request())
    return requests


def test_each_request_is_a_prefix_of_the_next_apart_from_the_recitation(
    session: Session,
) -> None:
    requests = research_steps(session)
    for before, after in itertools.pairwise(requests):
        stable, next_stable = without_recitation(before), without_recitation(after)
        assert next_stable[: len(stable)] == stable
        assert len(next_stable) > len(stable)
        stable_wire = wire_text(ModelRequest(before.system, before.tools, stable))
        next_wire = wire_text(ModelRequest(after.system, after.tools, next_stable))
        assert next_wire.startswith(stable_wire[: -len("]}")])


def test_system_and_tools_are_identical_in_every_request(session: Session) -> None:
    requests = research_steps(session)
    session.app.record_compaction(session.id, "Summary.", session.version - 1, 900, 100)
    requests.append(session.request())
    wires = [to_wire(r, model="m", max_tokens=1000) for r in requests]
    assert all((r.system, r.tools) == (FRAME.system, FRAME.tools) for r in requests)
    assert all(
        json.dumps([w.system, w.tools]) == json.dumps([wires[0].system, wires[0].tools])
        for w in wires
    )
    assert wires[0].system[0]["cache_control"] == {"type": "ephemeral"}  # type: ignore[typeddict-item]
    assert wires[0].tools[-1]["cache_control"] == {"type": "ephemeral"}  # type: ignore[typeddict-item]
