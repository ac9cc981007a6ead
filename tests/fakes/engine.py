"""An engine on the in-memory event store, with fakes for the outside world."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from uuid import UUID, uuid4

import msgspec
from eventsourcing.application import Application

from adapters.blobs.filesystem import FilesystemBlobStore
from adapters.bootstrap import bootstrap_engine
from adapters.bootstrap.in_memory import IN_MEMORY, in_memory_files
from adapters.bootstrap.parts import build_tools
from adapters.config.settings import Settings
from adapters.embeddings import HashingEmbedder
from adapters.llm.scripted import ScriptedLLM
from adapters.llm.tokens import CharRatioTokenCounter
from application.bridge import SyncBridge
from application.engine_settings import EngineSettings
from application.memories import Memories
from application.ports import LLM, ToolExecutionError
from application.runner import AgentRunner
from application.runs import RunScheduler
from application.sessions import SessionService
from application.tools.base import AnyTool, Tool, ToolContext
from application.workspace_files import WorkspaceFiles
from domain.conversation import LiveItem
from domain.values import SessionSettings
from tests.fakes.memory_index import InMemoryMemoryIndex


class InMemoryDeltaSink:
    """Collects the live deltas per session."""

    def __init__(self) -> None:
        self.deltas: dict[UUID, list[LiveItem]] = {}

    async def publish(self, session_id: UUID, delta: LiveItem) -> None:
        self.deltas.setdefault(session_id, []).append(delta)


class PathArgs(msgspec.Struct, forbid_unknown_fields=True):
    path: str


class DeleteFile(Tool[PathArgs]):
    """A risky tool that only remembers what it was asked to delete."""

    name = "delete_file"
    description = "Delete a file."
    Args = PathArgs
    risky = True

    def __init__(self) -> None:
        self.deleted: list[str] = []

    async def run(self, args: PathArgs, context: ToolContext) -> str:
        self.deleted.append(args.path)
        return f"deleted {args.path}"


class QueryArgs(msgspec.Struct, forbid_unknown_fields=True):
    query: str


class FlakySearch(Tool[QueryArgs]):
    """A safe tool whose behaviour the test sets: fail, be slow, or answer at length."""

    name = "search"
    description = "Search the web."
    Args = QueryArgs
    timeout = 5.0

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.fail_with: str | None = None
        self.delay = 0.0
        self.answer: Callable[[str], str] = lambda q: f"results for {q}"

    async def run(self, args: QueryArgs, context: ToolContext) -> str:
        self.calls.append(args.query)
        if self.delay:
            await asyncio.sleep(self.delay)
        if self.fail_with:
            raise ToolExecutionError(self.fail_with)
        return self.answer(args.query)


@dataclass
class Engine:
    sessions: SessionService
    runner: AgentRunner
    scheduler: RunScheduler
    deltas: InMemoryDeltaSink
    delete_file: DeleteFile
    search: FlakySearch
    bridge: SyncBridge
    files: WorkspaceFiles  # on an in-memory store of its own, and the engine's blobs
    memories: Memories  # on an in-memory store of its own, searched by brute force
    started: list[UUID] = field(default_factory=list)

    async def new_session(
        self,
        workspace_id: UUID | None = None,
        *,
        owner_id: UUID | None = None,
        team_id: UUID | None = None,
        **settings: object,
    ) -> UUID:
        receipt = await self.bridge(
            self.sessions.start_session,
            workspace_id=workspace_id or uuid4(), owner_id=owner_id or uuid4(), title="test",
            settings=SessionSettings.of(settings), team_id=team_id,
        )  # fmt: skip
        return receipt.session_id

    def kinds(self, session_id: UUID) -> list[str]:
        return [type(e).__name__ for e in self.sessions.session_events(session_id)]

    def events(self, session_id: UUID, kind: str) -> list[object]:
        return [e for e in self.sessions.session_events(session_id) if type(e).__name__ == kind]


def make_engine(
    llm: LLM,
    tmp_path: Path,
    *,
    settings: EngineSettings | None = None,
    sessions: SessionService | None = None,
    extra_tools: list[AnyTool] | None = None,
    real_delete_file: bool = False,
    skills_dir: Path | None = None,
    memories: Memories | None = None,
) -> Engine:
    """The engine as bootstrap wires it, on the in-memory store (or `sessions`), with the
    built-in tools (the file tools on in-memory workspace files) plus the fake
    `delete_file` and `search` (`real_delete_file`: the built-in one stays), and deltas
    collected per session. `memories`: another engine's, to share its long-term memory."""
    delete_file, search = DeleteFile(), FlakySearch()
    deltas = InMemoryDeltaSink()
    config = Settings(data_dir=tmp_path, skills_dir=skills_dir)  # blobs: tmp_path / "blobs"
    bridge, blobs = SyncBridge(4), FilesystemBlobStore(tmp_path / "blobs")
    files = in_memory_files(blobs, bridge, config)
    memories = memories or in_memory_memories(bridge)
    builtin = build_tools(config, files=files, memories=memories)
    fakes = [search] if real_delete_file else [delete_file, search]
    wired = bootstrap_engine(
        config,
        sessions=sessions,
        bridge=bridge,
        blobs=blobs,
        llm=llm,
        # A tool passed in replaces the built-in of the same name.
        tools={t.name: t for t in [*builtin, *fakes, *(extra_tools or [])]}.values(),
        counter=CharRatioTokenCounter(),
        deltas=deltas,
        engine_settings=settings or EngineSettings(),
        memories=memories,
    )
    return Engine(
        wired.sessions, wired.runner, wired.scheduler, deltas, delete_file, search, wired.bridge,
        files, memories,
    )  # fmt: skip


def in_memory_memories(bridge: SyncBridge) -> Memories:
    """Long-term memory on a new in-memory store, searched with the hashing embedder."""
    store = Application[UUID](env={**IN_MEMORY, "IS_SNAPSHOTTING_ENABLED": "y"})
    return Memories(store, InMemoryMemoryIndex(store, HashingEmbedder()), bridge)


def tools_with(*tools: AnyTool) -> list[AnyTool]:
    """The built-in tools (workspace files not configured) with `tools` in place of the
    built-ins of the same name (the fake `delete_file` for the real one, say)."""
    return list({t.name: t for t in [*build_tools(Settings()), *tools]}.values())


def scripted(*turns: dict[str, object]) -> ScriptedLLM:
    return ScriptedLLM.from_turns(list(turns))
