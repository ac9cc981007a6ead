"""The SSE contract: one Struct per Server-Sent Event type, and their tagged union.

The SSE `event:` line is the Struct's tag, and the JSON `data:` carries it again as
`type`, so the exported JSON Schema is a discriminated union. Where the product's
frontend types define an event (`thinking`, `tool_call`, `tool_result`, `content`,
`confirm_required`, `done`, `error`) the payload has exactly their fields and names;
more may be added, none renamed. New fields always get defaults.

Live previews (`thinking` and `content` chunks while the model streams) have no
version and no SSE id. Every stored event's payload has its session `version` (the
SSE id) and `timestamp`. The stored assistant turn is a `message` (role assistant),
never a `content` with text: a client that appends every `content` shows each answer
once. A turn that cites sources ends with a `content` of no text that carries its
`citations` (sent again when a client catches up, being part of the stored turn).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal, TypeAlias
from uuid import UUID

import msgspec

# Any JSON value (tool arguments are the tool's own shape).
JsonValue = Annotated[object, msgspec.Meta(extra_json_schema={"description": "any JSON value"})]
JsonObject = dict[str, JsonValue]
ToolOutcome = Literal["success", "error", "cancelled", "interrupted"]
# `waiting_confirmation`: a chat stream's end while its run still waits for a human
# (not a stored event: no SSE id); the run stays suspended and goes on once answered.
DoneStatus = Literal["completed", "stopped", "max_iterations_reached", "waiting_confirmation"]


class Payload(msgspec.Struct, tag_field="type", kw_only=True, omit_defaults=True, frozen=True):
    """Base of every SSE payload; the tag is the SSE event type."""


class Stored(Payload, frozen=True):
    """A payload of a stored event: its session version is the SSE id."""

    version: int
    timestamp: datetime


# -- value shapes ---------------------------------------------------------------


class Citation(msgspec.Struct, kw_only=True, omit_defaults=True, frozen=True):
    """A source (the frontend's `Citation`, plus where its text is kept)."""

    index: int
    url: str
    title: str
    domain: str
    snippet: str
    blob_ref: str | None = None


class ToolUse(msgspec.Struct, frozen=True):
    """A tool call an assistant turn asked for."""

    id: str
    name: str
    args: JsonObject


class Usage(msgspec.Struct, frozen=True):
    input: int
    output: int
    cache_read: int
    cache_write: int


class PlanItem(msgspec.Struct, frozen=True):
    title: str
    status: Literal["pending", "in_progress", "done", "skipped"]


# -- the frontend's events ------------------------------------------------------------


class Thinking(Payload, tag="thinking", frozen=True):
    """Live model thinking (`status: end` once its turn is stored)."""

    content: str
    status: Literal["start", "end"] | None = None


class Content(Payload, tag="content", frozen=True):
    """A live chunk of the answer (never stored, never repeated), or a turn's last
    `content`: no text, the sources the turn cites."""

    content: str
    citations: list[Citation] | None = None


class ToolCall(Payload, tag="tool_call", frozen=True):
    """A tool call: asked for (`pending`, a stored event: its version is the SSE id), or
    live once its execution starts (`running`, no version: never stored, not resumed)."""

    id: str
    name: str
    status: Literal["pending", "running"]
    args: JsonObject | None = None
    risk: Literal["safe", "risky"] = "safe"
    version: int | None = None
    timestamp: datetime | None = None


class ToolResult(Stored, tag="tool_result", frozen=True):
    """A tool call's result; `outcome` tells an interrupted call from a cancelled one."""

    id: str
    status: Literal["success", "error", "cancelled"]
    outcome: ToolOutcome
    success: bool
    result: str | None = None
    error: str | None = None
    blob_ref: str | None = None
    duration_ms: int = 0


class ConfirmRequired(Stored, tag="confirm_required", frozen=True):
    action_id: str
    tool: str
    args: JsonObject
    description: str
    tool_call_id: str


class RunArtifact(msgspec.Struct, frozen=True):
    """An artifact a run made (`GET /artifacts/{artifact_id}`)."""

    artifact_id: UUID
    kind: Literal["report", "ppt", "code", "file"]
    name: str


class Done(Stored, tag="done", frozen=True):
    """A run ended; `message_id` is its last assistant message's id (None: it had none)."""

    status: DoneStatus
    message_id: str | None
    tokens_used: int
    run_id: UUID
    reason: str
    artifacts: list[RunArtifact] | None = None  # what the run made, in order


class Error(Stored, tag="error", frozen=True):
    """A run failed."""

    message: str
    error_code: str
    run_id: UUID
    message_id: str | None = None
    tokens_used: int = 0


# -- the other stored events ----------------------------------------------------------


class Session(Stored, tag="session", frozen=True):
    change: Literal["started", "renamed", "completed", "archived"]
    title: str | None = None
    reason: str | None = None
    task_type: str | None = None
    model: str | None = None


class AttachedFile(msgspec.Struct, frozen=True):
    """A workspace file a user message attaches (`GET /workspaces/{id}/files/{file_id}`)."""

    file_id: UUID
    path: str
    media_type: str
    size: int


class Message(Stored, tag="message", frozen=True):
    """A message of the conversation, as `GET /sessions/{id}/messages` lists it."""

    id: str
    role: Literal["user", "assistant"]
    content: str
    attachments: list[str] | None = None
    files: list[AttachedFile] | None = None
    thinking: str | None = None
    tool_calls: list[ToolUse] | None = None
    run_id: UUID | None = None
    stop_reason: str | None = None
    model: str | None = None
    usage: Usage | None = None
    citations: list[Citation] | None = None  # the sources it cites, by first citation
    # `[n]` it wrote that name no source of the session: never to be shown as links
    unresolved_citations: list[int] | None = None


class Run(Stored, tag="run", frozen=True):
    status: Literal["requested", "started"]
    run_id: UUID
    worker: str | None = None


class Confirmed(Stored, tag="confirmed", frozen=True):
    action_id: str
    approved: bool
    feedback: str | None = None
    by: str = ""


class Plan(Stored, tag="plan", frozen=True):
    items: list[PlanItem]


class Finding(Stored, tag="finding", frozen=True):
    text: str
    citations: list[Citation]


class Progress(Payload, tag="progress", frozen=True):
    """Progress the agent noted (stored: with its version), or a running tool's live word
    on how it goes (`tool_call_id`, no version: never stored)."""

    text: str
    version: int | None = None
    timestamp: datetime | None = None
    tool_call_id: str | None = None


class BudgetNotice(msgspec.Struct, kw_only=True, omit_defaults=True, frozen=True):
    """A budget's spend this month reached one of its thresholds (percent of a limit)."""

    scope: Literal["org", "team", "workspace", "user"]
    scope_id: UUID
    period: str  # YYYY-MM (UTC)
    threshold: int
    spent_usd: str  # decimal, six places
    limit_usd: str | None = None
    spent_tokens: int
    limit_tokens: int | None = None


class FallbackNotice(msgspec.Struct, kw_only=True, frozen=True):
    """A model could not serve a call (overloaded, unavailable, rate limited) and the
    next model of the fallback list took over for the rest of the run."""

    from_model: str
    to_model: str
    reason: str
    error_code: str


class Notice(Stored, tag="notice", frozen=True):
    """Something about the agent's course: a strike, a reboot, a compaction, a budget,
    an answer citing `[n]` that names no source (`markers`), a fallback model, the MCP
    servers' tools the agent is offered from here on."""

    kind: Literal["strike", "reboot", "compaction", "budget", "citation", "fallback", "mcp_tools"]
    tool: str | None = None
    error_signature: str | None = None
    count: int | None = None
    questions: list[str] | None = None
    iterations_without_progress: int | None = None
    summary: str | None = None
    through_version: int | None = None
    tokens_before: int | None = None
    tokens_after: int | None = None
    budget: BudgetNotice | None = None
    markers: list[int] | None = None
    message: str | None = None
    fallback: FallbackNotice | None = None


class Source(Stored, tag="source", frozen=True):
    """A page the agent saw, by the number its citations use (`[n]`)."""

    number: int
    url: str
    title: str
    domain: str
    snippet: str
    via: Literal["search", "read"]
    tool_call_id: str
    blob_ref: str | None = None


class SkillActivated(Stored, tag="skill_activated", frozen=True):
    """A skill took over: by the matcher (`keyword`, `embedding`) or the model (`tool`)."""

    skill: str
    score: float
    by: Literal["keyword", "embedding", "tool"]
    skill_version: str = ""


class RecalledMemory(msgspec.Struct, frozen=True, kw_only=True):
    id: UUID  # `GET /api/v1/memories/{id}`
    namespace: str  # "user:<id>" | "workspace:<id>" | "team:<id>"
    category: Literal["preference", "knowledge", "history"]
    text: str
    score: float
    source_session_id: UUID | None = None
    source_version: int | None = None


class MemoriesRecalled(Stored, tag="memory_recalled", frozen=True):
    """Long-term memories recalled for the user's message as a run started: the agent
    sees them here in its conversation."""

    run_id: UUID
    memories: list[RecalledMemory]


DeckChange = Literal[
    "created", "slide_added", "slide_rewritten", "slide_removed", "slides_reordered",
    "template_changed",
]  # fmt: skip


class Artifact(Stored, tag="artifact", frozen=True):
    kind: Literal["report", "ppt", "code", "file"]
    name: str
    blob_ref: str
    size: int
    sha256: str
    media_type: str
    artifact_id: UUID | None = None  # `GET /artifacts/{artifact_id}`
    # The artifact's version this event made, from 1: a deck gets one per change
    # (`GET /artifacts/{artifact_id}/versions`), with what changed.
    artifact_version: int = 1
    change: DeckChange | None = None
    page_index: int | None = None  # the slide it changed, from 1
    download_url: str | None = None  # its bytes at this version


SsePayload: TypeAlias = (
    Thinking
    | Content
    | ToolCall
    | ToolResult
    | ConfirmRequired
    | Done
    | Error
    | Session
    | Message
    | Run
    | Confirmed
    | Plan
    | Finding
    | Progress
    | Notice
    | Source
    | SkillActivated
    | MemoriesRecalled
    | Artifact
)

PAYLOAD_CLASSES: tuple[type[SsePayload], ...] = SsePayload.__args__

_encoder = msgspec.json.Encoder()
_decoder: msgspec.json.Decoder[SsePayload] = msgspec.json.Decoder(SsePayload)


def event_type(payload: SsePayload) -> str:
    """The SSE `event:` name of a payload: its Struct's tag."""
    tag = payload.__struct_config__.tag
    assert isinstance(tag, str)
    return tag


def sse_id(payload: SsePayload) -> int | None:
    """The SSE id: a stored event's version; live previews have none, nor has a notice
    about a message's citations (it follows its message, which has the id: one id is
    never sent twice, and the message itself lists what did not resolve)."""
    if isinstance(payload, Notice) and payload.kind == "citation":
        return None
    if isinstance(payload, Stored | ToolCall | Progress):
        return payload.version
    return None


def encode(payload: SsePayload) -> bytes:
    return _encoder.encode(payload)


def decode(data: bytes | str) -> SsePayload:
    return _decoder.decode(data)


def json_schema() -> JsonObject:
    """The union as JSON Schema (a discriminated union on `type`)."""
    return msgspec.json.schema(SsePayload)
