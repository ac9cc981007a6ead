"""`tokendance demo` and `tokendance replay`: a session end to end, and its replay check."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from uuid import UUID, uuid4

from eventsourcing.domain import AggregateEvent

from adapters.bootstrap import Container, Engine, System, replay_engine
from application.replay import ReplayReport, replay
from projections.sessions import SessionsView
from projections.working_memory import WorkingMemoryView

DEMO_QUESTION = "Do heat pumps work in cold climates?"


def describe(e: AggregateEvent) -> str:
    """One line about an event, for people."""
    d = e.__dict__
    kind = type(e).__name__
    details = {
        "SessionStarted": lambda: f"title={d['title']!r}",
        "UserMessageAppended": lambda: repr(_short(d["text"])),
        "AssistantTurnRecorded": lambda: _turn(d),
        "ToolCallRequested": lambda: f"{d['tool']} {_short(str(d['args']), 60)}",
        "ToolResultRecorded": lambda: f"{d['status']}: {_short(d['summary'], 60)}",
        "PlanUpdated": lambda: ", ".join(f"{i['title'][:24]}={i['status']}" for i in d["items"]),
        "FindingRecorded": lambda: _short(d["text"], 70),
        "ProgressNoted": lambda: _short(d["text"], 70),
        "RunCompleted": lambda: f"reason={d['reason']}",
        "RunFailed": lambda: f"{d['error_code']}: {_short(d['reason'], 60)}",
        "RunStopped": lambda: f"reason={d['reason']}",
    }.get(kind, lambda: "")
    return f"{e.originator_version:>4}  {kind:<22} {details()}"


def _short(text: str, width: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


def _turn(d: dict[str, object]) -> str:
    content = d["content"]
    assert isinstance(content, list)
    kinds = "+".join(str(b["type"]) for b in content)
    tokens = f"in={d['input_tokens']} out={d['output_tokens']} cache_read={d['cache_read_tokens']}"
    return f"[{kinds}] {tokens}"


async def run_demo(system: System, question: str = DEMO_QUESTION) -> bool:
    """Run one scripted session on the real servers and print what a user would want to see."""
    await system.services.start()
    try:
        session_id = await _run_session(system.container, system.engine, question)
        return await _report(system.container, system.engine, session_id)
    finally:
        await system.stop()


async def _run_session(container: Container, engine: Engine, question: str) -> UUID:
    receipt = await container.bridge(
        container.sessions.start_session,
        workspace_id=uuid4(), owner_id=uuid4(), title=question, task_type="deep-research",
    )  # fmt: skip
    session_id = receipt.session_id
    print(f"session {session_id}\nuser: {question}\n")
    await engine.scheduler.send_message(session_id, question)
    end = await engine.scheduler.wait(session_id)
    print(f"run ended: {end}\n")
    head = await container.bridge(container.recorder.max_notification_id) or 0
    for view in container.views.values():
        await container.bridge(view.wait_for, head, 30.0)
    return session_id


async def _report(container: Container, engine: Engine, session_id: UUID) -> bool:
    events: list[AggregateEvent] = list(container.sessions.session_events(session_id))  # type: ignore[arg-type]
    print("== event stream ==")
    for e in events:
        print(describe(e))
    memory_view = container.views["working_memory"]
    assert isinstance(memory_view, WorkingMemoryView)
    memory = await container.bridge(memory_view.get, session_id)
    if memory is not None:
        for title, text in (
            ("task_plan.md", memory.task_plan),
            ("findings.md", memory.findings),
            ("progress.md", memory.progress),
        ):
            print(f"\n== {title} ==\n{textwrap.indent(text.strip(), '  ')}")
    sessions_view = container.views["sessions"]
    assert isinstance(sessions_view, SessionsView)
    row = await container.bridge(sessions_view.get, session_id)
    if row is not None:
        print(
            f"\n== token usage ==\n  input {row.input_tokens}, output {row.output_tokens}, "
            f"cache read {row.cache_read_tokens}, cache write {row.cache_write_tokens} "
            f"({row.message_count} messages, {row.tool_call_count} tool calls, "
            f"{row.failure_count} failures)"
        )
    report = await replay_events(engine, events)
    print_replay(report)
    return report.identical


async def replay_events(engine: Engine, events: Sequence[AggregateEvent]) -> ReplayReport:
    return await replay(events, engine=replay_engine(engine.runner))


def print_replay(report: ReplayReport) -> None:
    if report.divergence is None:
        print(f"\n== replay ==\n  {report.events} events reproduced identically, no model called")
        return
    d = report.divergence
    print(f"\n== replay ==\n  DIVERGED at version {d.version}")
    print(f"  stored:   {d.expected}\n  replayed: {d.got}")


async def run_replay(system: System, session_id: UUID) -> bool:
    events: list[AggregateEvent] = list(system.container.sessions.session_events(session_id))  # type: ignore[arg-type]
    if not events:
        print(f"session {session_id} has no events")
        return False
    report = await replay_events(system.engine, events)
    print_replay(report)
    return report.identical
