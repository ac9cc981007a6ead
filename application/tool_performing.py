"""Running one tool call: with its timeout, the notes it writes held for its result, its
output kept whole where the model sees only a summary. Every failure becomes an error
result (`Performed`), never an exception."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, replace

import msgspec

from application.ports import BlobStore, ToolExecutionError
from application.run_state import RunState
from application.session_notes import SessionNotesOfRun
from application.steps import FindingNote, Note, PlanNote, ProgressNote
from application.tools.base import AnyTool, ToolContext, ToolOutput
from application.tools.registry import ToolRegistry
from domain.errors import DomainError
from domain.policies import SUMMARY_LIMIT, summarize_output
from domain.values import Citation, PlanItem, SourceSeen, ToolResultStatus


@dataclass(frozen=True)
class Performed:
    """What running one tool call gave, before it is recorded: its status, the summary
    the model sees (or the error), where the full output is kept, and how long it took."""

    status: ToolResultStatus
    summary: str
    blob_ref: str | None = None
    error: str | None = None
    duration_ms: int = 0
    sources: tuple[SourceSeen, ...] = ()  # numbered when recorded, before the result
    notes: tuple[Note, ...] = ()  # what the tool wrote while it ran, recorded before it


async def perform(
    tools: ToolRegistry,
    blobs: BlobStore,
    state: RunState,
    tool_use_id: str,
    name: str,
    raw_args: dict[str, object],
) -> Performed:
    """Run the call `tool_use_id` of the run in `state` with its timeout."""
    tool, args = tools.parse(name, raw_args)
    notes = _HeldNotes(state, blobs, tool_use_id)
    ledger = state.ledger
    requested = ledger.requested.get(tool_use_id)
    context = ToolContext(
        state.session_id, tool_use_id, notes, ledger.workspace_id, ledger.owner_id,
        ledger.memory_scope, requested.originator_version if requested else None,
    )  # fmt: skip
    performed = await _run(tool, args, context, blobs)
    return replace(performed, notes=tuple(notes.held))


async def _run(
    tool: AnyTool, args: msgspec.Struct, context: ToolContext, blobs: BlobStore
) -> Performed:
    started = time.perf_counter()
    try:
        output = await asyncio.wait_for(tool.run(args, context), timeout=tool.timeout)
    except ToolExecutionError as e:
        return _error(f"{e.code}: {e}" if e.code else str(e), started)
    except DomainError as e:
        return _error(str(e), started)
    except TimeoutError:
        return _error(f"timed out after {tool.timeout:g}s", started)
    except Exception as e:
        return _error(f"{type(e).__name__}: {e}", started)
    text, seen = (output.text, output.sources) if isinstance(output, ToolOutput) else (
        output, ()
    )  # fmt: skip
    reads = any(page.via == "read" and page.blob_ref is None for page in seen)
    blob_ref = await blobs.put(text.encode()) if len(text) > SUMMARY_LIMIT or reads else None
    # A page read is kept whole: its source points at the text the model was given.
    seen = tuple(
        replace(page, blob_ref=blob_ref) if page.via == "read" and not page.blob_ref else page
        for page in seen
    )
    return Performed(
        "success", summarize_output(text, blob_ref), blob_ref, None, _ms_since(started), seen
    )


def _error(message: str, started: float) -> Performed:
    return Performed("error", message, None, message, _ms_since(started))


def _ms_since(started: float) -> int:
    return int((time.perf_counter() - started) * 1000)


class _HeldNotes(SessionNotesOfRun):
    """The notes a tool writes while it runs, held to be recorded with its result (in one
    write, in the same order); what a tool needs back from the log is recorded at once."""

    def __init__(self, state: RunState, blobs: BlobStore, tool_use_id: str) -> None:
        super().__init__(state, blobs, tool_use_id)
        self.held: list[Note] = []

    async def update_plan(self, items: list[PlanItem]) -> None:
        self.held.append(PlanNote(items))

    async def record_finding(self, text: str, citations: list[Citation]) -> None:
        self.held.append(FindingNote(text, citations))

    async def note_progress(self, text: str) -> None:
        self.held.append(ProgressNote(text))
