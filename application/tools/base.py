"""What a tool is: a name, a description, typed arguments, a risk level and a `run`.

Arguments are a msgspec Struct: its JSON Schema is what the model sees, and the same
Struct validates what the model sent (a mismatch is a kept failure, not a crash).
A tool that needs the outside world takes its port in `__init__`; the composition
root (`adapters/bootstrap/`) builds the instances and hands them to the registry.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, Protocol, TypeAlias, TypeVar
from uuid import UUID

import msgspec

from application.receipt import Receipt
from domain.conversation import ToolSpec
from domain.events import SessionEvent
from domain.memory_values import MemoryScope
from domain.session import AgentSession
from domain.sources import NumberedSource
from domain.values import ArtifactKind, ArtifactRef, Citation, PlanItem, SkillSpec, SourceSeen


class SessionNotes(Protocol):
    """What built-in tools may write to their session (bound to it by the runner)."""

    async def update_plan(self, items: list[PlanItem]) -> None: ...

    async def record_finding(self, text: str, citations: list[Citation]) -> None: ...

    async def note_progress(self, text: str) -> None: ...

    async def sources(self) -> dict[int, NumberedSource]:
        """The session's sources so far, by number."""
        ...

    async def keep(self, data: bytes, media_type: str) -> str:
        """Keep `data` in the blob store (not an artifact); its blob ref."""
        ...

    async def stored_text(self, blob_ref: str) -> bytes:
        """What the session keeps under `blob_ref` (a read source's full text);
        `BlobNotFound` when it is gone."""
        ...

    async def active_skill(self) -> str | None:
        """The name of the skill active in the session, if any."""
        ...

    async def activate_skill(self, skill: SkillSpec) -> None:
        """Record that the model took up `skill` itself."""
        ...

    async def create_artifact(
        self, kind: ArtifactKind, name: str, data: bytes, media_type: str
    ) -> ArtifactRef:
        """Keep `data` in the blob store and record it as the session's artifact."""
        ...

    async def session_log(self) -> Sequence[SessionEvent]:
        """The session's whole log, as of now (a deck is folded from it)."""
        ...

    async def change_deck(self, command: Callable[[AgentSession], None]) -> Receipt:
        """Record a deck change (`application.decks`) in one write, if the session is
        still where this run left it (else `Conflict`)."""
        ...


@dataclass(frozen=True)
class ToolContext:
    """Where a tool runs: its session and what it may touch there."""

    session_id: UUID
    tool_use_id: str
    notes: SessionNotes
    workspace_id: UUID | None = None  # the session's workspace (its files live there)
    owner_id: UUID | None = None  # whom the session works for
    memory: MemoryScope | None = None  # the namespaces its memory tools use
    call_version: int | None = None  # the version of the call's `ToolCallRequested`


@dataclass(frozen=True)
class ToolOutput:
    """A tool's output with the pages it saw. Each page becomes a numbered source of the
    session when the result is recorded; `source_marker(i)` in the text (for
    `sources[i]`) is replaced by that number, as `[n]`."""

    text: str
    sources: tuple[SourceSeen, ...] = ()


def source_marker(index: int) -> str:
    return f"{{{{source:{index}}}}}"


A = TypeVar("A", bound=msgspec.Struct)


class Tool(ABC, Generic[A]):
    """Base of every tool; subclasses set the class attributes and implement `run`."""

    name: ClassVar[str]
    description: ClassVar[str]
    Args: ClassVar[type[msgspec.Struct]]
    risky: ClassVar[bool] = False
    # True for tools whose only effect is to record events: a replay runs them again
    # (any other tool answers a replay with its recorded result).
    replayable: ClassVar[bool] = False
    timeout: ClassVar[float] = 60.0
    # True when its output is a JSON object (the API then answers it as one).
    json_output: ClassVar[bool] = False

    @abstractmethod
    async def run(self, args: A, context: ToolContext) -> str | ToolOutput:
        """Do the work; return the full output (with the pages it saw, if any). Raise
        `ToolExecutionError` to fail."""

    def describe(self, args: A) -> str:
        """One line for a human asked to approve this call."""
        shown = msgspec.json.encode(args).decode()
        return f"{self.name} {shown if len(shown) <= 300 else shown[:297] + '...'}"

    def spec(self) -> ToolSpec:
        return ToolSpec(self.name, self.description, input_schema(self.Args))


# A tool of any argument type: the registry holds tools of many, and validates each
# call's arguments against that tool's own `Args` before `run` sees them.
AnyTool: TypeAlias = Tool[Any]


def input_schema(args: type[msgspec.Struct]) -> dict[str, object]:
    """The Struct's JSON Schema with every `$ref` inlined (the model wants one object)."""
    (schema,), components = msgspec.json.schema_components([args])
    return _inline(schema, components)  # type: ignore[return-value]


def _inline(node: object, components: dict[str, object]) -> object:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            return _inline(components[ref.rsplit("/", 1)[-1]], components)
        # A schema's own "title" is the Struct's name: noise to the model. (A property
        # called "title" maps to a dict, so it stays.)
        return {
            k: _inline(v, components)
            for k, v in node.items()
            if not (k == "title" and isinstance(v, str))
        }
    if isinstance(node, list):
        return [_inline(v, components) for v in node]
    return node
