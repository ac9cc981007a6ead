"""`tokendance demo` and `tokendance replay`: a research session end to end, and its replay.

The demo needs no key and no network: a local research web (`local_web.py`) answers
its searches and serves the pages, and a scripted model (`scripts/research.yaml`, with
the local web's address filled in) plans, searches, reads, records findings and writes
a cited report, unless `TOKENDANCE_LLM` names another model.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from pathlib import Path
from string import Template
from typing import assert_never
from uuid import UUID, uuid4

from adapters.bootstrap import replay_engine
from adapters.commands.command_store import empty_store_note, store_place
from adapters.config.settings import Settings
from adapters.container import Container
from adapters.llm.scripted import BUNDLED_SCRIPTS
from adapters.system import Engine, System
from adapters.web_search.local_web import LocalWeb
from application.ports import BlobStore
from application.replay import ReplayReport, replay
from domain.events import SessionEvent
from domain.session import AgentSession as S
from domain.session_decks import DeckLog as D

DEMO_QUESTION = "Research whether heat pumps work in cold climates, with sources."
RESEARCH_SCRIPT = BUNDLED_SCRIPTS / "research.yaml"


def research_script(web_url: str, into: Path) -> Path:
    """The research script with the local web's address (`${web}`) filled in, as a file
    in `into`."""
    text = Template(RESEARCH_SCRIPT.read_text(encoding="utf-8")).substitute(web=web_url)
    into.mkdir(parents=True, exist_ok=True)
    path = into / "demo-research.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def demo_settings(settings: Settings, web: LocalWeb) -> Settings:
    """Settings for a demo on `web`: its search key and address, its pages readable, and
    the research script unless another model is configured."""
    script = research_script(web.base_url, settings.data_dir)
    return settings.override(
        llm=settings.llm or f"scripted:{script}",
        tavily_api_key=web.api_key,
        tavily_url=web.base_url,
        fetch_allow="127.0.0.1",
    )


def describe(e: SessionEvent) -> str:
    """One line about an event, for people."""
    return f"{e.originator_version:>4}  {type(e).__qualname__.split('.')[-1]:<22} {_details(e)}"


def _details(e: SessionEvent) -> str:
    match e:
        case S.SessionStarted(title=title):
            return f"title={title!r}"
        case S.UserMessageAppended(text=text):
            return repr(_short(text))
        case S.AssistantTurnRecorded(content=content):
            kinds = "+".join(b["type"] for b in content)
            tokens = f"in={e.input_tokens} out={e.output_tokens} cache_read={e.cache_read_tokens}"
            cites = "".join(f"[{c.number}]" for c in e.citations)
            flagged = "".join(f"[{n}]" for n in e.unknown_markers)
            return (
                f"[{kinds}] {tokens}"
                + (f" cites {cites}" if cites else "")
                + (f" no source for {flagged}" if flagged else "")
            )
        case S.ToolCallRequested(tool=tool, args=args):
            return f"{tool} {_short(str(args), 60)}"
        case S.ToolResultRecorded(status=status, summary=summary):
            return f"{status}: {_short(summary, 60)}"
        case S.PlanUpdated(items=items):
            return ", ".join(f"{i.title[:24]}={i.status}" for i in items)
        case S.FindingRecorded(text=text) | S.ProgressNoted(text=text):
            return _short(text, 70)
        case S.RunCompleted(reason=reason) | S.RunStopped(reason=reason):
            made = ", ".join(a.name for a in e.artifacts)
            return f"reason={reason} tokens={e.tokens_used}" + (f" made {made}" if made else "")
        case S.RunFailed(reason=reason, error_code=code):
            return f"{code}: {_short(reason, 60)}"
        case S.SourceRecorded(number=number, title=title, url=url, via=via):
            return f"[{number}] via {via}: {_short(title, 40)} {url}"
        case S.SkillActivated(name=name, skill_version=version, by=by, score=score):
            return f"{name} {version} by {by} (score {score:g})"
        case S.MemoriesRecalled(memories=memories):
            return "; ".join(f"{m.category}: {_short(m.text, 40)}" for m in memories)
        case S.ModelFallbackUsed(from_model=was, to_model=now, error_code=code):
            return f"{was} failed [{code}]: {now} took over"
        case S.McpToolsetChanged(tools=tools, unavailable=down):
            names = ", ".join(f"{t['server']}__{t['tool']}" for t in tools) or "none"
            return f"MCP tools: {names}" + (f"; unreachable: {len(down)}" if down else "")
        case S.ArtifactCreated(kind=kind, name=name, size=size, media_type=media_type):
            return f"{kind} {name} ({size} bytes, {media_type})"
        case S.DeckCreated(deck=deck, title=title, slides=slides, template=template):
            return f"deck {deck} {title!r}: {len(slides)} slides, {template} ({e.size} bytes)"
        case D.DeckEvent(deck=deck, deck_version=version, size=size):
            return f"deck {deck} version {version} ({size} bytes)"
        case (
            S.ConfirmationRequested() | S.ConfirmationGiven() | S.StrikeRecorded()
            | S.RebootRequested() | S.ContextCompacted() | S.BudgetThresholdReached()
            | S.RunRequested() | S.RunStarted() | S.SessionRenamed() | S.SessionCompleted()
            | S.SessionArchived()
        ):  # fmt: skip
            return ""
        case _:
            assert_never(e)


def _short(text: str, width: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 3] + "..."


async def run_demo(system: System, question: str = DEMO_QUESTION) -> bool:
    """Run one scripted session on the real servers and print what a user would want to see."""
    await system.services.start()
    try:
        session_id = await run_session(system.container, system.engine, question)
        into = system.settings.data_dir / "demo-research"
        return await _report(system.container, system.engine, session_id, into)
    finally:
        await system.stop()


async def run_session(
    container: Container, engine: Engine, question: str, task_type: str = "deep-research"
) -> UUID:
    """A new session asked `question`, its run ended and the read models caught up."""
    receipt = await container.bridge(
        container.sessions.start_session,
        workspace_id=uuid4(), owner_id=uuid4(), title=question, task_type=task_type,
    )  # fmt: skip
    session_id = receipt.session_id
    print(f"session {session_id}\nuser: {question}\n")
    await engine.scheduler.send_message(session_id, question)
    end = await engine.scheduler.wait(session_id)
    print(f"run ended: {end}\n")
    head = await container.bridge(container.recorder.max_notification_id) or 0
    for name, view in container.views.items():
        if container.log_of(name) is container.sessions:  # not the accounts' log
            await container.bridge(view.wait_for, head, 30.0)
    return session_id


async def _report(container: Container, engine: Engine, session_id: UUID, into: Path) -> bool:
    events = list(container.sessions.session_events(session_id))
    print("== event stream ==")
    for e in events:
        print(describe(e))
    await _print_memory(container, session_id)
    print_sources(events)
    for e in events:
        if isinstance(e, S.ArtifactCreated):
            await print_artifact(engine.blobs, e, into)
    await _print_usage(container, session_id)
    print(f"\n== answer ==\n{textwrap.indent(final_answer(events) or '(none)', '  ')}")
    print_citations(events)
    report = await replay_events(engine, events)
    print_replay(report)
    return report.identical


async def _print_memory(container: Container, session_id: UUID) -> None:
    memory = await container.bridge(container.views.working_memory.get, session_id)
    if memory is not None:
        for title, text in (
            ("task_plan.md", memory.task_plan),
            ("findings.md", memory.findings),
            ("progress.md", memory.progress),
        ):
            print(f"\n== {title} ==\n{textwrap.indent(text.strip(), '  ')}")


def print_sources(events: Sequence[SessionEvent]) -> None:
    """The session's sources by number: title, URL and how the agent came by each."""
    seen: dict[int, S.SourceRecorded] = {}
    via: dict[int, list[str]] = {}
    for e in events:
        if isinstance(e, S.SourceRecorded):
            seen.setdefault(e.number, e)
            via.setdefault(e.number, [])
            if e.via not in via[e.number]:
                via[e.number].append(e.via)
    print("\n== sources ==")
    for number, first in sorted(seen.items()):
        print(f"  [{number}] {first.title} ({', '.join(via[number])})\n      {first.url}")
    if not seen:
        print("  (none)")


async def print_artifact(blobs: BlobStore, e: S.ArtifactCreated, into: Path) -> None:
    """The artifact, written to a file in `into` (the demo's session is in a workspace of
    no user: the API would answer 404), and its text if it is text."""
    data = await blobs.get(e.blob_ref)
    into.mkdir(parents=True, exist_ok=True)
    written = (into / (Path(e.name).name or f"artifact-{e.originator_version}")).absolute()
    written.write_bytes(data)
    print(
        f"\n== {e.kind} artifact ==\n  {e.name}: {e.size} bytes, {e.media_type}\n"
        f"  written: {written}"
    )
    if e.media_type.startswith(("text/", "application/json")):
        text = data.decode("utf-8", errors="replace")
        print(f"\n{textwrap.indent(text.strip(), '    ')}")


async def _print_usage(container: Container, session_id: UUID) -> None:
    row = await container.bridge(container.views.sessions.get, session_id)
    if row is not None:
        print(
            f"\n== token usage ==\n  input {row.input_tokens}, output {row.output_tokens}, "
            f"cache read {row.cache_read_tokens}, cache write {row.cache_write_tokens} "
            f"({row.message_count} messages, {row.tool_call_count} tool calls, "
            f"{row.failure_count} failures)"
        )


def print_citations(events: Sequence[SessionEvent]) -> None:
    """What the answer cites, as the session's sources resolved it when it was recorded."""
    turns = [e for e in events if isinstance(e, S.AssistantTurnRecorded)]
    if not turns or not (turns[-1].citations or turns[-1].unknown_markers):
        return
    print("\n== citations of the answer ==")
    for c in turns[-1].citations:
        print(f"  [{c.number}] {c.title} - {c.url}")
    for n in turns[-1].unknown_markers:
        print(f"  [{n}] names no source of this session: shown as text, not as a link")


def final_answer(events: Sequence[SessionEvent]) -> str:
    """The text of the last assistant turn that has any: what the user is told."""
    for e in reversed(events):
        if isinstance(e, S.AssistantTurnRecorded):
            text = "".join(str(b.get("text", "")) for b in e.content if b["type"] == "text")
            if text.strip():
                return text.strip()
    return ""


async def replay_events(engine: Engine, events: Sequence[SessionEvent]) -> ReplayReport:
    return await replay(events, engine=replay_engine(engine.runner))


def print_replay(report: ReplayReport) -> None:
    if report.divergence is None:
        print(f"\n== replay ==\n  {report.events} events reproduced identically, no model called")
        return
    d = report.divergence
    print(f"\n== replay ==\n  DIVERGED at version {d.version}")
    print(f"  stored:   {d.expected}\n  replayed: {d.got}")


async def run_replay(system: System, session_id: UUID) -> bool:
    events = list(system.container.sessions.session_events(session_id))
    if not events:
        empty = empty_store_note(system, "replay")
        print(empty or f"session {session_id} has no events in {store_place(system.settings)}")
        return False
    report = await replay_events(system.engine, events)
    print_replay(report)
    return report.identical
